"""`hcp webhooks …`: subscriptions, their deliveries, and the deliverer (docs/integrations.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from cli.common import cli_container
from cli.output import JsonOpt, cli_actor, command_group, print_json, print_json_lines, print_table, table

app = command_group("Webhooks: subscriptions, deliveries, and the deliverer")


@app.command()
def create(
    url: str = typer.Option(..., help="Where deliveries are POSTed"),
    event_type: list[str] = typer.Option(..., "--event-type", "-e", help="An event type "
                                         "(`hcp webhooks event-types`); repeat for more"),
    secret_file: Path = typer.Option(None, help="A file holding the signing secret (whsec_… or "
                                     "24-64 characters); without it, asked for"),
    tenant: str = typer.Option(None, help="Whose events (default: every tenant's)"),
    description: str = typer.Option("", help="What the subscription is for"),
    as_json: bool = JsonOpt,
) -> None:
    """Subscribe a URL to event types; prints the subscription (never the secret)."""
    secret = (secret_file.read_text().strip() if secret_file
              else typer.prompt("signing secret", hide_input=True))
    with cli_container() as c:
        made = c.integrations.subscriptions.subscribe(url, event_type, secret, tenant, cli_actor(),
                                                      description)
    if as_json:
        print_json(made.to_json())
    else:
        typer.echo(f"subscribed {made.subscription_id} to {', '.join(made.event_types)}")


@app.command("list")
def list_webhooks(as_json: bool = JsonOpt) -> None:
    """Every subscription that is not deleted."""
    with cli_container() as c:
        found = c.integrations.subscriptions.listed()
    if as_json:
        print_json_lines(s.to_json() for s in found)
        return
    shown = table("id", "url", "event types", "tenant", "status")
    for s in found:
        shown.add_row(s.subscription_id, s.url, ",".join(s.event_types), s.tenant or "(all)", s.status)
    print_table(shown)


@app.command("event-types")
def event_types() -> None:
    """The event types a webhook may subscribe to, and the scope each needs."""
    from integrations.webhooks.topics import TOPICS

    shown = table("type", "scope", "what")
    for t in TOPICS.values():
        shown.add_row(t.name, t.scope + (" (operator)" if t.operator else ""), t.event.SUMMARY)
    print_table(shown)


@app.command()
def delete(subscription_id: str) -> None:
    """Stop delivering to a subscription."""
    with cli_container() as c:
        c.integrations.subscriptions.delete(subscription_id, None, cli_actor())
    typer.echo(f"deleted {subscription_id}")


@app.command()
def enable(subscription_id: str) -> None:
    """Resume a disabled subscription where it stopped."""
    with cli_container() as c:
        c.integrations.subscriptions.enable(subscription_id, None, cli_actor())
    typer.echo(f"enabled {subscription_id}")


@app.command()
def deliveries(subscription_id: str, limit: int = typer.Option(50, min=1, max=1000),
               as_json: bool = JsonOpt) -> None:
    """A subscription's delivery attempts, newest first."""
    with cli_container() as c:
        sub = c.integrations.subscriptions.get(subscription_id)
        found = c.integrations.deliveries.page(sub.subscription_id, limit)
    if as_json:
        print_json_lines(d.to_json(operator=True) for d in found)
        return
    shown = table("delivery", "position", "type", "attempt", "status", "answer", "ms")
    for d in found:
        shown.add_row(d.delivery_id, str(d.position), d.event_type, str(d.attempt), d.status,
                      str(d.response_status or d.error or ""), str(d.duration_ms or ""))
    print_table(shown)


@app.command()
def redeliver(subscription_id: str, delivery_id: str) -> None:
    """Queue a delivery's event to be sent again."""
    with cli_container() as c:
        queued = c.integrations.deliveries.queue_redelivery(
            subscription_id, delivery_id, cli_actor(), c.settings.webhook_redeliveries_per_hour)
    typer.echo(f"queued {queued.delivery_id}")


@app.command()
def deliver(once: bool = typer.Option(False, "--once", help="One pass over every subscription, "
                                      "then exit")) -> None:
    """Deliver webhooks from the log (the one deliverer per database; others stand by)."""
    from cli.signals import stop_on_signals

    with cli_container() as c:
        if once:
            deliverer = c.integrations.deliverer()
            try:
                typer.echo(f"delivered {deliverer.step()}")
            finally:
                deliverer.sender.close()
            return
        stop = stop_on_signals()
        c.integrations.deliver(stop, on_wait=lambda: typer.echo(
            "standing by: another deliverer holds the lock", err=True))
