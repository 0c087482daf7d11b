"""The client's transport: 503 and 429 retried after Retry-After, then the error body as an
HcpError; pages followed to the head. (A fake transport: the client core alone.)"""

from __future__ import annotations

import httpx
import pytest
from hcp_client import Client, HcpError, Retry, models

HEALTHY = {"status": "ok", "mode": "embedded", "checks": {}}


def fake(answer) -> httpx.MockTransport:  # type: ignore[no-untyped-def]
    return httpx.MockTransport(answer)


def test_a_503_is_retried_after_its_retry_after_then_answers() -> None:
    down = httpx.Response(503, headers={"Retry-After": "2"}, json={"error": {"code": "x", "message": "down"}})
    answers = iter([down, httpx.Response(200, json=HEALTHY)])
    waits: list[float] = []
    client = Client("http://hcp", "k", transport=fake(lambda _: next(answers)),
                    retry=Retry(sleep=waits.append))
    assert client.health().status == "ok" and waits == [2.0]


def test_the_last_503_and_any_4xx_raise_the_servers_error() -> None:
    body = {"error": {"code": "invalid_request", "message": "bad", "field": "events[0].type"}}
    client = Client("http://hcp", "k", transport=fake(lambda _: httpx.Response(422, json=body)))
    with pytest.raises(HcpError) as info:
        client.append([{"stream_id": "s", "type": "nope", "payload": {}}])
    assert (info.value.status, info.value.code, info.value.field) == (422, "invalid_request",
                                                                      "events[0].type")
    down = Client("http://hcp", "k", transport=fake(lambda _: httpx.Response(503, json={})),
                  retry=Retry(attempts=3, sleep=lambda _: None))
    with pytest.raises(HcpError) as info:
        down.health()
    assert info.value.status == 503


def _event(position: int) -> dict:
    return {"event_id": f"00000000-0000-0000-0000-{position:012d}", "stream_id": "s",
            "stream_seq": position, "position": position, "type": "turn.user", "schema_version": 1,
            "payload": {"text": "x"},
            "metadata": {**dict.fromkeys(models.EventMetadataOut.model_fields), "recorded_at": "2026-01-01"},
            "recorded_at": "2026-01-01T00:00:00+00:00", "payload_digest": "d", "prev_hash": "p",
            "hash": "h"}


def test_iter_events_follows_pages_to_the_head() -> None:
    def page(request: httpx.Request) -> httpx.Response:
        after = int(request.url.params["after"])
        events = [_event(p) for p in range(after + 1, min(after + 2, 5) + 1)]
        return httpx.Response(200, json={"events": events, "head": 5,
                                         "next_after": events[-1]["position"] if events else after})

    client = Client("http://hcp", "k", transport=fake(page))
    assert [e.position for e in client.iter_events(page=2)] == [1, 2, 3, 4, 5]
