"""Where the harness gets its adapters and where it records: embedded or over HTTP.

Embedded (``hcp demo``): the one resolver (``inference.resolve``) and the store's ingest
function, in process; the resolver answers digests, and the engine opens the adapter's
bytes from the artifact store by digest, re-hashed. Stack (``hcp demo --stack``): the
server's HTTP API (``HttpSink``; the chat endpoint answers, ``harness.endpoint``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events.ingest import Author, ClientEvent, IngestLimits, ReferenceCheck, ingest
from events.store import EventStore
from harness.serve import Production
from inference.resolve import Resolver
from inference.types import Target
from kernel.errors import NotFound

ALIAS = "production"


class RegistryAdapters:
    """The production alias through the registry's resolver (the base where it points
    nowhere yet)."""

    def __init__(self, resolver: Resolver, base_model: str, precision: str = "auto",
                 device: str | None = None) -> None:
        self.resolver, self.base_model = resolver, base_model
        self.precision, self.device = precision, device

    def production(self, specialist: str) -> Production:
        try:
            resolved = self.resolver.resolve(specialist, ALIAS, base_if_unset=self.base_model)
        except NotFound:  # not a registered specialist: the base answers for it
            base = Target(self.resolver.base(self.base_model), None, self.precision, self.device)
            return Production(f"{specialist}@0", base)
        return Production(resolved.ref, resolved.target(self.precision, self.device))


class IngestSink:
    """The ingest path of the server, called in process."""

    def __init__(self, store: EventStore, limits: IngestLimits, author: Author,
                 references: ReferenceCheck | None) -> None:
        self.store, self.limits, self.author, self.references = store, limits, author, references

    def post(self, events: Sequence[ClientEvent]) -> int:
        appended = ingest(self.store, list(events), self.limits, self.author, self.references)
        return sum(a.created for a in appended)


def event_json(event: ClientEvent) -> dict[str, Any]:
    """An event as ``POST /v1/events`` takes it."""
    metadata = {k: str(v) if k == "correlation_id" else v for k, v in (
        ("specialist", event.specialist), ("adapter_version", event.adapter_version),
        ("contract", event.contract), ("correlation_id", event.correlation_id)) if v is not None}
    return {"stream_id": event.stream_id, "type": event.type, "payload": event.payload,
            "event_id": str(event.event_id), "metadata": metadata}


class HttpSink:
    """``POST /v1/events`` of a running server (stack mode)."""

    def __init__(self, client: Any) -> None:  # an httpx.Client with base_url and auth
        self.client = client

    def post(self, events: Sequence[ClientEvent]) -> int:
        response = self.client.post("/v1/events", json={"events": [event_json(e) for e in events]})
        response.raise_for_status()
        return sum(1 for a in response.json().get("events", []) if a.get("created"))
