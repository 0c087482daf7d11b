"""What the model is given and what its answer means, under the serving contract. Pure.

The system message is the contract's: ``prompts.system`` (the harness's), then
``prompts.<specialist>`` (the slot's own), then every skill's text, then, when the
request offers tools the slot may call, the tool menu and the answer format the
built-in agent tasks teach (one JSON object ``{"tool": NAME, "arguments": {...}}``).
The client's own system messages follow it, then the conversation. A prompt or skill the
contract stores only by digest has no text to give and is left out (the server cannot
apply what it was not given).

An answer that is exactly such a JSON object naming an offered tool is a tool call:
returned as OpenAI ``tool_calls`` (``finish_reason`` ``tool_calls``) and recorded as
``tool.called``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from contract.sections import Harness, StoredText
from harness.routing import routing_input
from inference.stops import after_json_object
from kernel.errors import Invalid
from serving.openai_shapes import ChatRequest, Message, ToolCallJson, ToolSpec


class ToolRefused(Invalid):
    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.field = f"tools[{index}].function.name"


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: dict[str, Any]

    def openai(self) -> ToolCallJson:
        return {"id": self.call_id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(self.arguments)}}


def allowed_tools(harness: Harness, specialist: str) -> list[str]:
    slot = harness.specialists[specialist]
    return sorted(slot.tools) if slot.tools is not None else list(harness.tool_allowlist)


def check_tools(harness: Harness, request: ChatRequest) -> None:
    """Refuse (422 naming the tool) a tool the contract allows no specialist to call."""
    anywhere = set(harness.tool_allowlist)
    for slot in harness.specialists.values():
        anywhere |= set(slot.tools or [])
    for index, tool in enumerate(request.tools or []):
        if tool.function.name not in anywhere:
            raise ToolRefused(index, f"tool '{tool.function.name}' is not in the serving "
                              f"contract's allowlist ({', '.join(sorted(anywhere)) or 'none'})")


def offered_tools(harness: Harness, specialist: str, request: ChatRequest) -> list[ToolSpec]:
    """The request's tools this specialist may call (the others are not shown to it)."""
    if request.tool_choice == "none":
        return []
    allowed = set(allowed_tools(harness, specialist))
    return [t for t in request.tools or [] if t.function.name in allowed]


def system_text(harness: Harness, specialist: str, tools: list[ToolSpec]) -> str:
    parts = [_text(harness.prompts.get("system")), _text(harness.prompts.get(specialist))]
    parts += [_text(skill) for _, skill in sorted(harness.skills.items())]
    if tools:
        menu = "\n".join(f"- {t.function.name}: {t.function.description} "
                         f"parameters {json.dumps(t.function.parameters, sort_keys=True)}"
                         for t in tools)
        parts.append(f"Tools you may call:\n{menu}\nTo call one, answer with one JSON object "
                     'and nothing else: {"tool": NAME, "arguments": {...}}')
    return "\n\n".join(p for p in parts if p)


def _text(value: StoredText | str | None) -> str:
    return value.text.strip() if isinstance(value, StoredText) else ""


def chat_messages(system: str, messages: list[Message]) -> list[dict[str, str]]:
    """The conversation as the chat template takes it: the contract's system message
    first; a tool's result and an assistant's earlier tool call become plain turns."""
    out = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role in ("system", "developer"):
            out.append({"role": "system", "content": m.text})
        elif m.role == "tool":
            out.append({"role": "user", "content": f"Tool result: {m.text}"})
        elif m.role == "assistant" and m.tool_calls:
            calls = [{"tool": c.function.name, "arguments": _arguments(c.function.arguments)}
                     for c in m.tool_calls]
            out.append({"role": "assistant",
                        "content": "\n".join(json.dumps(c, ensure_ascii=False) for c in calls)})
        else:
            out.append({"role": m.role, "content": m.text})
    return _merged_systems(out)


def _merged_systems(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    # Chat templates take one system message, first: the client's join the contract's.
    systems = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    rest = [m for m in messages if m["role"] != "system"]
    return ([{"role": "system", "content": "\n\n".join(systems)}] if systems else []) + rest


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def tool_call_in(text: str, tools: list[ToolSpec]) -> ToolCall | None:
    """The tool call the answer makes, if it is one (see the module's docstring)."""
    start = text.find("{")
    if not tools or start < 0 or text[:start].strip():
        return None
    end = after_json_object(text)
    if end is None or text[end:].strip():
        return None
    try:
        doc = json.loads(text[start:end])
    except ValueError:
        return None
    names = {t.function.name for t in tools}
    if not (isinstance(doc, dict) and set(doc) == {"tool", "arguments"} and doc["tool"] in names
            and isinstance(doc["arguments"], dict)):
        return None
    return ToolCall(f"call_{uuid.uuid4().hex[:24]}", doc["tool"], doc["arguments"])


def routing_text(request: ChatRequest) -> str:
    """What the router reads: the client's system messages and the user's last message
    (the application a request arrives in is part of what routes it)."""
    systems = [m.text for m in request.messages if m.role in ("system", "developer")]
    users = [m.text for m in request.messages if m.role == "user"]
    return routing_input(systems, users[-1] if users else "")
