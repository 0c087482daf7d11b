"""API keys in the log: the ``api_key.*`` events and the one projector of ``api_keys``.

A key's row is what its stream (``api_key:<id>``) says: ``api_key.created`` makes it
(scopes, tenant, expiry and, since version 2, the secret's sha256: the hash of 32
random bytes gives nothing to brute-force, and without it a swapped hash would be a
takeover nobody could see), ``api_key.revoked`` ends it, ``api_key.console_signed_out``
ends its console sessions. ``last_used_at`` is bookkeeping,
not history (written at most once a minute per key and process), so it is a working
column. ``agrees_with_log`` is how the key check refuses a row that its events do not
make: a superuser's ``UPDATE api_keys SET scopes = '["admin"]'`` grants nothing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from access.tables import api_keys
from events.projections.compare import canonical, row_differences
from events.projections.model import (
    NO_GUARD,
    Change,
    Insert,
    Near,
    Projection,
    ProjectionSet,
    State,
    Unrecorded,
    Update,
)
from events.projections.replay import replay
from events.server_events import Logged, ServerEvent
from events.store import EventStore

LEGACY_SECONDS = 60.0  # how far a v1 writer's own clock may be from its event's time


def key_stream(key_id: str) -> str:
    return f"api_key:{key_id}"


class ApiKeyCreated(ServerEvent):
    TYPE = "api_key.created"
    VERSION = 2
    SUMMARY = "An API key was issued: its scopes, tenant, expiry and the sha256 of its secret"
    UPCASTERS = {1: lambda p: {**p, "secret_sha256": None}}

    key_id: str
    scopes: list[str]
    label: str | None
    tenant: str | None
    expires_at: str | None  # ISO 8601, UTC
    secret_sha256: str | None  # None: written before version 2, which did not record it


class ApiKeyRevoked(ServerEvent):
    TYPE = "api_key.revoked"
    SUMMARY = "An API key was revoked"

    key_id: str
    reason: str


class ApiKeyConsoleSignedOut(ServerEvent):
    TYPE = "api_key.console_signed_out"
    SUMMARY = ("The console sessions of an API key were ended (sign-out): every cookie issued "
               "before this event is refused")

    key_id: str


def project_api_keys(done: Logged[Any], state: State) -> list[Change]:
    event = done.event
    if isinstance(event, ApiKeyConsoleSignedOut):
        # The event's position, not its time: a cookie carries the value it was issued
        # under, and positions order sign-ins and sign-outs without comparing clocks.
        return [Update("api_keys", (event.key_id,), {"console_signed_out_position": done.position})]
    if isinstance(event, ApiKeyRevoked):
        return [Update("api_keys", (event.key_id,), {
            "revoked_at": done.recorded_at, "revoked_by": done.actor, "revoked_reason": event.reason})]
    assert isinstance(event, ApiKeyCreated)
    legacy = done.stored_version < 2
    created: Any = Near(done.recorded_at, LEGACY_SECONDS, "api_key.created v1 stamped the row "
                        "from the writer's clock") if legacy else done.recorded_at
    secret: Any = event.secret_sha256 if event.secret_sha256 is not None else Unrecorded(
        "api_key.created v1 did not record the secret's hash")
    expires = datetime.fromisoformat(event.expires_at) if event.expires_at else None
    return [Insert("api_keys", {
        "key_id": event.key_id, "secret_sha256": secret, "scopes": list(event.scopes),
        "label": event.label, "created_at": created, "tenant": event.tenant, "expires_at": expires,
        "last_used_at": None, "revoked_at": None, "revoked_by": None, "revoked_reason": None,
        "console_signed_out_position": None})]


API_KEYS = Projection(api_keys, (ApiKeyCreated, ApiKeyRevoked, ApiKeyConsoleSignedOut),
                      project_api_keys, guard=NO_GUARD,
                      working={"last_used_at": "written at most once a minute per key and process "
                                               "when the key is used: bookkeeping, not history"})
KEY_PROJECTIONS = ProjectionSet(API_KEYS)
KEY_TYPES = (ApiKeyCreated.TYPE, ApiKeyRevoked.TYPE, ApiKeyConsoleSignedOut.TYPE)


def agrees_with_log(store: EventStore, row: Any) -> str | None:
    """None when the key's row is what its events make; else what differs (the key check
    then refuses the key: the log, not the table, says what a key may do)."""
    key_id = row._mapping["key_id"]
    replayed = replay(KEY_PROJECTIONS, store.of_types(KEY_TYPES, [key_stream(key_id)]))
    if replayed.problems:
        return replayed.problems[0].message
    expected = replayed.rows["api_keys"].get((key_id,))
    if expected is None:
        return "no api_key.created event made this key"
    live = {c.name: canonical(c, row._mapping[c.name]) for c in api_keys.columns}
    return row_differences(API_KEYS, live, expected, replayed.origins["api_keys"][(key_id,)]) or None
