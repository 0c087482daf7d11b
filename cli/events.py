"""`hcp events …` and `hcp sessions …`: what is in the log, for an auditor at the server.

Every id printed here is the one the other commands take: an event id for `hcp lineage
downstream --event` or `hcp audit proof`, a session (its stream id) for `hcp events list
--stream` or `hcp lineage downstream --stream`. ``--quiet`` prints those ids alone, one a
line, for a script (`docker ps -q` does the same).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from cli.common import cli_container
from cli.output import JsonOpt, command_group, print_json, print_json_lines, print_table, table

if TYPE_CHECKING:
    from events.model import RecordedEvent

events_app = command_group("The log's events: list a stream's or the whole log's, show one")
sessions_app = command_group("Sessions (one stream each): the latest, newest first")
QuietOpt = typer.Option(False, "--quiet", "-q", help="Only the ids, one a line")


@events_app.command("list")
def list_events(
    stream: str = typer.Option(None, help="Only this stream (a session id, `specialist:coding` …)"),
    event_type: list[str] = typer.Option(None, "--type", "-t", help="Only this type; repeatable"),
    after: int = typer.Option(0, help="Start after this position (stream_seq with --stream)"),
    limit: int = typer.Option(50, min=1, max=10_000),
    quiet: bool = QuietOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Events in log order (a stream's in its own order): position, id, type, stream."""
    wanted = set(event_type or [])
    with cli_container() as c:
        found = _events(c.store, stream, after, limit, wanted)
        if not found and stream and not c.store.read_stream(stream, 0, 1):
            from kernel.errors import NotFound

            raise NotFound(f"no stream '{stream}'")
    if quiet:
        typer.echo("\n".join(str(e.event_id) for e in found) if found else "", nl=bool(found))
    elif as_json:
        print_json_lines(e.to_json() for e in found)
    else:
        shown = table("position", "seq", "event id", "type", "stream", "recorded")
        for e in found:
            shown.add_row(str(e.position), str(e.stream_seq), str(e.event_id), e.type, e.stream_id,
                          e.recorded_at.isoformat(timespec="seconds"))
        print_table(shown)


def _events(store: Any, stream: str | None, after: int, limit: int,
            wanted: set[str]) -> list[RecordedEvent]:
    """Up to ``limit`` events after ``after``, of the wanted types; read a page at a time."""
    found: list[RecordedEvent] = []
    while len(found) < limit:
        page = (store.read_stream(stream, after, 1000) if stream else store.read_all(after, 1000))
        if not page:
            break
        found += [e for e in page if not wanted or e.type in wanted]
        after = page[-1].stream_seq if stream else page[-1].position
    return found[:limit]


@events_app.command("show")
def show_event(event_id: str = typer.Argument(..., help="An event id (a completion id "
                                              "chatcmpl-… is its turn.assistant event's)"),
               as_json: bool = JsonOpt) -> None:
    """One event: its metadata, hash and payload."""
    from events.model import parse_event_id
    from kernel.errors import NotFound

    wanted = parse_event_id(event_id)
    with cli_container() as c:
        event = c.store.get(wanted)
    if event is None:
        raise NotFound(f"no event {event_id}")
    print_json(event.to_json()) if as_json else _print_event(event)


def _print_event(event: RecordedEvent) -> None:
    from cli.output import print_fields

    data = event.to_json()
    payload = data.pop("payload")
    print_fields({**data, "payload": payload}, title=f"{event.type} at position {event.position}")


@sessions_app.command("list")
def list_sessions(
    tenant: str = typer.Option(None, help="Only sessions started in this tenant"),
    specialist: str = typer.Option(None, help="Only sessions a specialist served"),
    adapter: str = typer.Option(None, help="Only sessions an adapter version served, e.g. coding@3"),
    outcome: str = typer.Option(None, help="Only sessions whose episode ended so (success …)"),
    limit: int = typer.Option(20, min=1, max=1000),
    quiet: bool = QuietOpt,
    as_json: bool = JsonOpt,
) -> None:
    """The latest sessions, newest first: session id, where it started, tenant, outcome."""
    from events.session_search import SessionFilter

    where = SessionFilter(tenant, specialist, adapter, outcome)
    with cli_container() as c:
        starts = c.session_search.latest(where, None, limit).starts
        rows = [_session_row(c.store, s.stream_id, s.position, s.stream_seq) for s in starts]
    if quiet:
        typer.echo("\n".join(r["session"] for r in rows) if rows else "", nl=bool(rows))
    elif as_json:
        print_json_lines(rows)
    else:
        shown = table("session", "started at", "tenant", "harness", "events", "outcome")
        for r in rows:
            shown.add_row(r["session"], str(r["position"]), r["tenant"] or "-", r["harness"] or "-",
                          str(r["events"]), r["outcome"] or "-")
        print_table(shown)


def _session_row(store: Any, stream_id: str, position: int, seq: int) -> dict[str, Any]:
    events = store.read_stream(stream_id, seq - 1, 1000)
    start = events[0] if events else None
    ended = next((e for e in events if e.type == "episode.completed"), None)
    return {"session": stream_id, "position": position,
            "tenant": start.metadata.tenant if start else None,
            "harness": start.payload.get("harness") if start else None,
            "events": len(events),
            "outcome": (ended.payload.get("outcome") or "ended") if ended else None}


def register(app: typer.Typer) -> None:
    app.add_typer(events_app, name="events")
    app.add_typer(sessions_app, name="sessions")
