"""Where the harness gets its adapters and where it records: embedded or over HTTP.

Embedded (``hcp demo``): the registry's resolver and the store's ingest function, in
process. Stack (``hcp demo --stack``): the server's HTTP API for both; the adapter's
bytes come from the shared artifact store, re-hashed on open either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from events.ingest import Author, ClientEvent, IngestLimits, ReferenceCheck, ingest
from events.store import EventStore
from harness.serve import Production
from kernel.errors import NotFound
from trainer.registry.artifacts import ArtifactStore
from trainer.registry.serving import Resolver

ALIAS = "production"


class RegistryAdapters:
    """The production alias through the registry, the artifact hash-checked on open."""

    def __init__(self, resolver: Resolver, artifacts: ArtifactStore) -> None:
        self.resolver, self.artifacts = resolver, artifacts

    def production(self, specialist: str) -> Production:
        try:
            resolved = self.resolver.resolve(specialist, ALIAS)
        except NotFound:
            return Production(f"{specialist}@0", None, None)
        directory = self.artifacts.open_dir(resolved.artifact_sha256)  # raises if corrupted
        return Production(f"{specialist}@{resolved.version}", directory, resolved.artifact_sha256)


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


class HttpAdapters:
    """``GET /v1/specialists/{name}/resolve`` of a running server; bytes from the shared
    artifact store."""

    def __init__(self, client: Any, artifacts: ArtifactStore) -> None:
        self.client, self.artifacts = client, artifacts

    def production(self, specialist: str) -> Production:
        response = self.client.get(f"/v1/specialists/{specialist}/resolve", params={"alias": ALIAS})
        if response.status_code == 404:
            return Production(f"{specialist}@0", None, None)
        response.raise_for_status()
        body = response.json()
        directory = self.artifacts.open_dir(body["artifact_sha256"])
        return Production(f"{specialist}@{body['version']}", directory, body["artifact_sha256"])
