"""Sending OpenLineage events through openlineage-python's transports (file, HTTP, Kafka).

The export resumes from a checkpoint (the last log position whose run events were all
handed to the transport), so a periodic ``hcp lineage export openlineage`` sends each
run event at least once; consumers de-duplicate on (runId, eventType, eventTime). Each
sink has its own checkpoint (``sink_checkpoint``): an export to one never makes another
skip what it has not been sent.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from openlineage.client import OpenLineageClient
from openlineage.client.transport import get_default_factory

from audit.exports.openlineage import OpenLineageEvents
from kernel.errors import Invalid

TRANSPORT_TYPES = ("file", "http", "kafka", "console")


@dataclass(frozen=True)
class ExportReport:
    sent: int
    last_position: int  # the checkpoint to resume after


def sink_checkpoint(transport: Mapping[str, Any]) -> str:
    """The checkpoint of one sink: its type and where it writes (the file, the URL, the
    Kafka servers and topic), never its credentials; long targets by their digest."""
    kind = str(transport.get("type"))
    target = {"file": transport.get("log_file_path"), "http": transport.get("url"),
              "kafka": f"{(transport.get('config') or {}).get('bootstrap.servers')}/{transport.get('topic')}",
              }.get(kind, "")
    name = f"openlineage:{kind}:{target}"
    if len(name) > 200:
        name = f"openlineage:{kind}:sha256:{hashlib.sha256(str(target).encode()).hexdigest()}"
    return name


def client_for(transport: Mapping[str, Any]) -> OpenLineageClient:
    """An OpenLineage client on the transport ``transport`` describes (its ``type`` one of
    file, http, kafka, console; the other keys as openlineage-python documents them).

    Raises:
        Invalid: no transport, or an unknown type.
    """
    kind = transport.get("type")
    if kind not in TRANSPORT_TYPES:
        raise Invalid(f"OpenLineage transport type must be one of {TRANSPORT_TYPES}, not {kind!r} "
                      "(set HCP_OPENLINEAGE_TRANSPORT or pass --file/--url/--kafka)")
    config = dict(transport)
    return OpenLineageClient(transport=get_default_factory().create(config),
                             config={"transport": config})


def export(events: OpenLineageEvents, client: OpenLineageClient, after: int,
           save: Callable[[int], None] | None = None,
           on_event: Callable[[int], None] | None = None) -> ExportReport:
    """Emit every run event of the log events after position ``after``; ``save`` is called
    with each log position once all its run events are sent."""
    sent, done, pending = 0, after, after
    for position, run_event in events.after(after):
        if position != pending and save is not None and pending != done:
            save(pending)
            done = pending
        client.emit(run_event)
        sent, pending = sent + 1, position
        if on_event is not None:
            on_event(position)
    client.close(timeout=10)
    if save is not None and pending != done:
        save(pending)
    return ExportReport(sent=sent, last_position=pending)
