"""W3C trace context on chat requests, and the marker by which a trace joins a session.

A client instrumented with OpenTelemetry may send ``traceparent``
(``00-<trace id>-<parent span id>-<flags>``) with its chat request. The gateway then
records, on the session it recorded the exchange in, the trace's ``trace.linked`` marker:
the event whose id is derived from the tenant and the trace (``marker_id``), which OTLP
ingest looks for first (``integrations.otlp.linking``). So the spans of that trace join
the gateway's session whenever they arrive, whatever they carry (a span without
``gen_ai.response.id``, an agent root exported first), and an instrumented client calling
the gateway stays one session. The marker is written once per trace: a trace that has one
(linked by an earlier request, or mapped to a session of its own by OTLP ingest) gets no
other. The trace does not choose the session (the ``X-HCP-Session``, ``user`` and history
rules do): one trace around many conversations (a batch script's root span) must not
merge them.

A ``traceparent`` that does not parse is ignored, as the W3C spec asks: the request is
served as if it had none.
"""

from __future__ import annotations

import re
import uuid

NAMESPACE = uuid.UUID("6f1c4d1e-3b0a-4c53-9a7e-0a5b0f3e2d11")  # OTLP ingest's: ids must not change
LINKED, SESSION = "linked", "session"  # the marker kinds: joined a gateway session, or its own
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


def marker_id(tenant: str | None, trace_id: str, kind: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"{tenant or ''}|{trace_id}|marker|{kind}")


def trace_of(traceparent: str | None) -> str | None:
    """The trace id (32 lowercase hex) a ``traceparent`` header names, or None."""
    found = _TRACEPARENT.fullmatch(traceparent.strip()) if traceparent else None
    if found is None:
        return None
    version, trace_id, parent, _, rest = found.groups()
    if version == "ff" or (version == "00" and rest) or set(trace_id) == {"0"} or set(parent) == {"0"}:
        return None
    return trace_id
