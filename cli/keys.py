"""`hcp keys …`: API keys: create (the key is printed once, as the last line), list, revoke."""

from __future__ import annotations

from datetime import datetime, timedelta

import typer

from cli.common import cli_container
from cli.output import JsonOpt, cli_actor, command_group, print_json_lines, print_table, table
from cli.times import duration_param
from kernel.clock import utcnow

app = command_group("API keys: create, list, revoke")


@app.command()
def create(
    scope: list[str] = typer.Option(..., "--scope", "-s", help="A scope, e.g. events:read; "
                                    "repeat for more (an unknown one is refused, naming them all)"),
    label: str = typer.Option(None, help="Who or what the key is for (unique; names the actor)"),
    tenant: str = typer.Option(None, help="The one tenant the key acts for; "
                               "without it, an operator key for every tenant"),
    expires_in: timedelta = typer.Option(None, "--expires-in", parser=duration_param(),
                                         metavar="DURATION",
                                         help="e.g. 90d, 12h, 30m: refused after that"),
) -> None:
    """Create a key with the given scopes; prints the key as the last line."""
    expires_at = utcnow() + expires_in if expires_in else None
    with cli_container() as container:
        key = container.keys.create(scope, label, tenant, expires_at, actor=cli_actor())
    who = f"tenant '{tenant}'" if tenant else "every tenant (operator)"
    until = f", expiring {_when(expires_at)}" if expires_at else ""
    typer.echo(f"created key with scopes {sorted(set(scope))} for {who}{until}; "
               "store it now, it is not shown again:")
    typer.echo(key)


@app.command("list")
def list_keys(show_revoked: bool = typer.Option(True, help="Include revoked keys"),
              as_json: bool = JsonOpt) -> None:
    """Every key: scopes, tenant, expiry, last use (to within a minute), revocation."""
    with cli_container() as container:
        keys = [k for k in container.keys.all_keys() if show_revoked or k.revoked_at is None]
    if as_json:
        print_json_lines(k.to_json() for k in keys)
        return
    now = utcnow()
    shown = table("key id", "label", "scopes", "tenant", "created", "expires", "last used", "state")
    for k in keys:
        state = ("revoked" if k.revoked_at else "expired" if not k.usable(now) else "active")
        shown.add_row(k.key_id, k.label or "", ",".join(k.scopes), k.tenant or "(operator)",
                      _when(k.created_at), _when(k.expires_at), _when(k.last_used_at), state)
    print_table(shown)


@app.command()
def revoke(key_id: str, reason: str = typer.Option("", help="Recorded in the api_key.revoked event")) -> None:
    """Refuse a key from now on (API processes: within HCP_KEY_CACHE_SECONDS)."""
    with cli_container() as container:
        info = container.keys.revoke(key_id, cli_actor(), reason)
        ttl = container.settings.key_cache_seconds
    typer.echo(f"revoked {info.key_id} ({info.label or 'no label'}); running servers refuse it "
               f"within {ttl:g}s")


def _when(moment: datetime | None) -> str:
    return moment.isoformat(timespec="seconds") if moment else "-"
