"""The messages of a GenAI span, whichever convention carried them. Pure.

Read, in this order (the first that yields messages wins, per direction):

* ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (current semantic conventions: JSON
  of ``{role, parts: [{type: text|tool_call|tool_call_response, …}]}``), as span attributes
  or as attributes of a ``gen_ai.client.inference.operation.details`` event;
* the deprecated ``gen_ai.prompt`` / ``gen_ai.completion`` (a JSON list of ``{role,
  content}``, plain text, or the indexed ``gen_ai.prompt.0.role`` / ``.content`` form), as
  attributes or on ``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events;
* per-message events: ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message``, ``gen_ai.tool.message``, ``gen_ai.choice``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from integrations.otlp.decode import Span, SpanEvent
from integrations.otlp.limits import deeper_than


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    role: str
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = field(default=())
    tool_call_id: str | None = None  # a tool's response to that call


def input_messages(span: Span) -> list[Message]:
    return (_structured(span, "gen_ai.input.messages") or _legacy(span, "gen_ai.prompt")
            or _per_message_events(span, inputs=True))


def output_messages(span: Span) -> list[Message]:
    return (_structured(span, "gen_ai.output.messages") or _legacy(span, "gen_ai.completion")
            or _per_message_events(span, inputs=False))


def _sources(span: Span, key: str) -> list[Any]:
    found = [span.attributes[key]] if key in span.attributes else []
    return found + [e.attributes[key] for e in span.events if key in e.attributes]


def _structured(span: Span, key: str) -> list[Message]:
    for value in _sources(span, key):
        items = _json(value)
        if isinstance(items, list):
            return [m for m in (_from_parts(i) for i in items if isinstance(i, dict)) if m]
    return []


def _from_parts(item: dict[str, Any]) -> Message | None:
    texts, calls, responded = [], [], None
    for part in item.get("parts") or []:
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            calls.append(ToolCall(str(part.get("id") or ""), str(part.get("name") or ""),
                                  _arguments(part.get("arguments"))))
        elif kind == "tool_call_response":
            responded = str(part.get("id") or "")
            texts.append(_text(part.get("response", part.get("result"))))
    if "content" in item:  # a flat {role, content} in the structured slot
        texts.append(_text(item["content"]))
    return Message(str(item.get("role") or "user"), "\n".join(texts), tuple(calls), responded)


def _legacy(span: Span, key: str) -> list[Message]:
    for value in _sources(span, key):
        items = _json(value)
        if isinstance(items, list):
            return [_flat(i) for i in items if isinstance(i, dict)]
        if isinstance(items, dict):
            return [_flat(items)]
        if isinstance(value, str) and value:
            return [Message("user" if key == "gen_ai.prompt" else "assistant", value)]
    return _indexed(span.attributes, key)


def _indexed(attributes: dict[str, Any], key: str) -> list[Message]:
    pattern = re.compile(re.escape(key) + r"\.(\d+)\.(\w+)$")
    rows: dict[int, dict[str, Any]] = {}
    for name, value in attributes.items():
        if (m := pattern.match(name)) is not None:
            rows.setdefault(int(m.group(1)), {})[m.group(2)] = value
    return [_flat(rows[i]) for i in sorted(rows)]


def _flat(item: dict[str, Any]) -> Message:
    calls = tuple(ToolCall(str(c.get("id") or ""), str((c.get("function") or c).get("name") or ""),
                           _arguments((c.get("function") or c).get("arguments")))
                  for c in item.get("tool_calls") or [] if isinstance(c, dict))
    return Message(str(item.get("role") or "user"), _text(item.get("content")), calls,
                   item.get("tool_call_id") or item.get("id") if item.get("role") == "tool" else None)


MAX_NESTING = 64  # far past any message's shape; a payload may not nest deeper anyway
ROLE_OF_EVENT = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                 "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}


def _per_message_events(span: Span, inputs: bool) -> list[Message]:
    found = []
    for event in span.events:
        if inputs and event.name in ROLE_OF_EVENT:
            found.append(_flat({"role": ROLE_OF_EVENT[event.name], **_body(event)}))
        elif not inputs and event.name == "gen_ai.choice":
            body = _body(event)
            message = _json(body.get("message")) if "message" in body else body
            found.append(_flat({"role": "assistant", **(message if isinstance(message, dict) else {})}))
    return found


def _body(event: SpanEvent) -> dict[str, Any]:
    body = {k.removeprefix("gen_ai.event."): v for k, v in event.attributes.items()}
    for key in ("tool_calls", "content"):
        if isinstance(body.get(key), str) and body[key][:1] in "[{":
            body[key] = _json(body[key])
    return body


def _json(value: Any) -> Any:
    """Messages given as JSON text, or None. Text nested past what a payload may hold is
    not messages either (and would exhaust the parser's and the serialiser's recursion)."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return None
        return None if deeper_than(parsed, MAX_NESTING) else parsed
    return value if isinstance(value, list | dict) else None


def _arguments(value: Any) -> dict[str, Any]:
    parsed = _json(value) if isinstance(value, str) else value
    if isinstance(parsed, dict):
        return parsed
    return {} if value in (None, "") else {"input": value}


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "\n".join(_text(p.get("text", p.get("content")) if isinstance(p, dict) else p) for p in value)
    return json.dumps(value, sort_keys=True)
