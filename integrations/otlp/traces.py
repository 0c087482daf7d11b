"""OTLP traces in through the normal ingest path: decoded, mapped, appended in the key's
tenant (``events.ingest``: the same checks, stamps and registry references as POST
/v1/events), in batches of at most the server's batch limit."""

from __future__ import annotations

from dataclasses import dataclass

from events.ingest import Author, IngestLimits, ReferenceCheck, ingest
from events.store import Appender
from integrations.otlp.decode import decode
from integrations.otlp.mapping import Conversations, Mapped, map_spans
from kernel.errors import Invalid


class NothingToMap(Invalid):
    """Spans came, but none of them maps onto a session (HTTP 422)."""

    field = "resourceSpans"


@dataclass(frozen=True)
class TraceResult:
    mapped: Mapped
    spans: int
    created: int


def ingest_traces(appender: Appender, body: bytes, content_type: str, content_encoding: str,
                  limits: IngestLimits, author: Author,
                  references: ReferenceCheck | None = None,
                  conversations: Conversations | None = None) -> TraceResult:
    """Raises OtlpMalformed (400), NothingToMap (422) or ingest's BatchRejected."""
    spans = decode(body, content_type, content_encoding)
    mapped = map_spans(spans, author.tenant, conversations)
    if spans and not mapped.events:
        raise NothingToMap(f"none of the {len(spans)} spans maps onto a session: {mapped.summary()}")
    created, step = 0, limits.max_batch_events
    for start in range(0, len(mapped.events), step):
        appended = ingest(appender, mapped.events[start:start + step], limits, author, references)
        created += sum(a.created for a in appended)
    return TraceResult(mapped, len(spans), created)
