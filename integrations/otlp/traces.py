"""OTLP traces in through the normal ingest path: decoded, each trace's session read from
the log (integrations/otlp/linking.py), mapped, appended in the key's tenant
(``events.ingest``: the same checks, stamps and registry references as POST /v1/events),
in batches of at most the server's batch limit."""

from __future__ import annotations

from dataclasses import dataclass

from events.errors import EventIdConflict
from events.ingest import Author, IngestLimits, ReferenceCheck, ingest
from events.store import Appender, EventStore
from integrations.otlp.decode import OtlpLimits, Span, decode
from integrations.otlp.linking import trace_states
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


def ingest_traces(appender: Appender, store: EventStore, body: bytes, content_type: str,
                  content_encoding: str, limits: IngestLimits, author: Author,
                  references: ReferenceCheck | None = None,
                  conversations: Conversations | None = None,
                  otlp_limits: OtlpLimits | None = None) -> TraceResult:
    """Raises OtlpMalformed (400), OtlpTooLarge (413), NothingToMap (422) or ingest's
    BatchRejected."""
    spans = decode(body, content_type, content_encoding, otlp_limits)
    try:
        return _ingest(appender, store, spans, limits, author, references, conversations)
    except EventIdConflict:
        # Another request wrote a first marker of one of these traces meanwhile (the same
        # id, another stream): read the log again and map onto the stream it chose.
        return _ingest(appender, store, spans, limits, author, references, conversations)


def _ingest(appender: Appender, store: EventStore, spans: list[Span], limits: IngestLimits,
            author: Author, references: ReferenceCheck | None,
            conversations: Conversations | None) -> TraceResult:
    mapped = map_spans(spans, author.tenant, conversations, trace_states(store, spans, author.tenant))
    if spans and not mapped.events and not mapped.mapped_spans:
        raise NothingToMap(f"none of the {len(spans)} spans maps onto a session: {mapped.summary()}")
    created, step = 0, limits.max_batch_events
    for start in range(0, len(mapped.events), step):
        appended = ingest(appender, mapped.events[start:start + step], limits, author, references,
                          opens_derived=True)  # otel:<author's tenant>:…, derived here
        created += sum(a.created for a in appended)
    return TraceResult(mapped, len(spans), created)
