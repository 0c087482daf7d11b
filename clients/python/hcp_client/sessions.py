"""A session as a harness writes one: start, turns, route decisions, tool calls, close. The
events are buffered and appended in one batch at each ``flush`` (and at ``close``), with
ids made here, so a flush retried after a lost answer stores nothing twice."""

from __future__ import annotations

import uuid
from typing import Any

Event = dict[str, Any]


class SessionEvents:
    """What both clients' sessions share: building the events."""

    def __init__(self, stream_id: str | None = None, tenant: str | None = None,
                 specialist: str | None = None, harness: str | None = None, user: str | None = None) -> None:
        self.stream_id = stream_id or f"session-{uuid.uuid4().hex}"
        self.tenant, self.specialist = tenant, specialist
        self.pending: list[Event] = []
        self.add("session.started", {"harness": harness, "user": user})

    def add(self, kind: str, payload: dict[str, Any], **metadata: Any) -> Event:
        meta = {k: v for k, v in {"tenant": self.tenant, "specialist": self.specialist,
                                  **metadata}.items() if v is not None}
        event = {"event_id": str(uuid.uuid4()), "stream_id": self.stream_id, "type": kind,
                 "payload": {k: v for k, v in payload.items() if v is not None}}
        if meta:
            event["metadata"] = meta
        self.pending.append(event)
        return event

    def user(self, text: str) -> None:
        self.add("turn.user", {"text": text})

    def route(self, specialist: str, adapter_version: str, scores: dict[str, float] | None = None) -> None:
        self.add("route.decided", {"specialist": specialist, "adapter_version": adapter_version,
                                   "scores": scores})

    def assistant(self, text: str, model: str | None = None, tokens: int | None = None) -> None:
        self.add("turn.assistant", {"text": text, "model": model, "tokens": tokens})

    def tool_call(self, tool: str, arguments: dict[str, Any] | None = None,
                  call_id: str | None = None) -> str:
        call_id = call_id or f"call-{uuid.uuid4().hex[:12]}"
        self.add("tool.called", {"call_id": call_id, "tool": tool, "arguments": arguments or {}})
        return call_id

    def tool_result(self, call_id: str, ok: bool = True, output: Any = None,
                    error: str | None = None) -> None:
        self.add("tool.result", {"call_id": call_id, "ok": ok, "output": output, "error": error})

    def feedback(self, rating: float | None = None, thumbs: str | None = None,
                 comment: str | None = None) -> None:
        self.add("feedback.given", {"rating": rating, "thumbs": thumbs, "comment": comment})

    def completed(self, outcome: str = "success", score: float | None = None) -> None:
        self.add("episode.completed", {"outcome": outcome, "score": score})

    def take(self) -> list[Event]:
        taken, self.pending = self.pending, []
        return taken


class Session(SessionEvents):
    """``client.session()``; ``close()`` completes the episode and appends what is left."""

    def __init__(self, client: Any, **options: Any) -> None:
        super().__init__(**options)
        self.client = client

    def flush(self) -> None:
        events = self.take()
        if events:
            self.client.append(events)

    def close(self, outcome: str = "success", score: float | None = None) -> None:
        self.completed(outcome, score)
        self.flush()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        self.close("failure" if kind is not None else "success")


class AsyncSession(SessionEvents):
    def __init__(self, client: Any, **options: Any) -> None:
        super().__init__(**options)
        self.client = client

    async def flush(self) -> None:
        events = self.take()
        if events:
            await self.client.append(events)

    async def close(self, outcome: str = "success", score: float | None = None) -> None:
        self.completed(outcome, score)
        await self.flush()

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, kind: object, *_: object) -> None:
        await self.close("failure" if kind is not None else "success")
