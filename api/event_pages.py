"""Pages of the event log (GET /v1/events, /v1/streams/{id}), bounded by bytes as well as
by events, and encoded as they are read.

``limit`` events of the largest payload taken (256 KiB) made a page of over a gigabyte,
built whole in memory. Here events come from the store a few rows at a time
(``EventStore.scan_all``), each is encoded at once, and the page stops before the event
that would take it past ``max_bytes`` (HCP_MAX_PAGE_BYTES); it holds at least one event,
so a client that follows ``next_after`` always gets on. The body is ``EventPage``.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import closing

from fastapi import Response

from events.model import RecordedEvent
from kernel.json_output import json_bytes


def event_page(events: Generator[RecordedEvent, None, None], max_bytes: int, start: int,
               cursor: Callable[[RecordedEvent], int], head: Callable[[], int]) -> Response:
    """The page of ``events`` that fits in ``max_bytes``; ``next_after`` is the ``cursor``
    of its last event (``start`` when it has none), ``head`` is read once the page is."""
    encoded: list[bytes] = []
    size, next_after = 0, start
    with closing(events):
        for event in events:
            item = json_bytes(event.to_json())
            if encoded and size + len(item) > max_bytes:
                break
            encoded.append(item)
            size += len(item)
            next_after = cursor(event)
    body = b"".join((b'{"events":[', b",".join(encoded),
                     b'],"next_after":%d,"head":%d}' % (next_after, head())))
    return Response(body, media_type="application/json")
