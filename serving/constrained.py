"""What a request constrains its answer to, as a grammar the decoder enforces token by
token (llguidance: an Earley parser over the tokenizer's vocabulary, the structured-output
engine vLLM, SGLang and llama.cpp use; a small Rust wheel with no Python dependencies, so
the gateway checks a schema with it whatever engine serves). Pure.

- ``response_format`` ``json_object``: one JSON object; ``json_schema``: a JSON document
  valid under the schema. A schema llguidance cannot enforce (``not``, ``if``/``then``,
  ``uniqueItems``, a remote ``$ref``, a look-around pattern, …) is a 400 naming
  ``response_format.json_schema.schema`` and llguidance's reason: never an answer that
  only looks constrained.
- ``tool_choice`` ``required`` (any offered tool) or a named function: the answer is the
  tool call, in the format the gateway reads one (``{"tool": NAME, "arguments": {...}}``,
  ``serving.prompting``), its arguments valid under the tool's ``parameters``.
- Both at once constrain the same text two ways: a 400.

Whitespace inside the JSON is fixed (``", "`` and ``": "``): a free choice of spaces lets a
weak model spend its tokens on them and never close the document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from llguidance import LLMatcher

from serving.openai_shapes import ChatRequest, ToolSpec
from serving.request_checks import RequestRefused, forced_tool

COMPACT: Any = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
JSON_OBJECT: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True)
class Constraint:
    kind: str  # json_object | json_schema | tool
    grammar: str  # llguidance's grammar text (LLMatcher.grammar_from_*)
    schema: dict[str, Any] | None = None  # the JSON schema, for engines that take one


def constraint_of(request: ChatRequest, tools: list[ToolSpec]) -> Constraint | None:
    """The request's constraint on its answer, None when it has none; raises
    RequestRefused (400) for one the decoder cannot enforce."""
    forced = forced_tool(request)
    kind = request.response_format.type if request.response_format else "text"
    if forced is not None and kind != "text":
        raise RequestRefused("response_format.type", f"response_format {kind} and a forced "
                             "tool call (tool_choice) both constrain the answer: send one")
    if forced is not None:
        return _tool_call(forced, tools)
    if kind == "json_object":
        return _json("json_object", JSON_OBJECT, "response_format.type")
    if kind == "json_schema":
        spec = request.response_format.json_schema if request.response_format else None
        if spec is None or not spec.schema_:
            raise RequestRefused("response_format.json_schema", "response_format json_schema "
                                 "needs json_schema.schema, the JSON schema of the answer")
        return _json("json_schema", spec.schema_, "response_format.json_schema.schema")
    return None


def _json(kind: str, schema: dict[str, Any], field: str) -> Constraint:
    grammar = _compiled(lambda: LLMatcher.grammar_from_json_schema(schema, overrides=COMPACT), field)
    return Constraint(kind, grammar, schema)


def _tool_call(forced: str, tools: list[ToolSpec]) -> Constraint:
    """``{"tool": NAME, "arguments": ARGS}`` for the named tool, or any of ``tools`` (``*``)."""
    chosen = [t for t in tools if forced in ("*", t.function.name)]
    if not chosen:
        raise RequestRefused("tool_choice.function.name", f"tool_choice names '{forced}', which "
                             "the serving contract does not let this specialist call")
    for index, tool in enumerate(tools):  # each tool's own schema, so the 400 names it
        if tool in chosen:
            _compiled(lambda t=tool: LLMatcher.grammar_from_json_schema(_parameters(t)),
                      f"tools[{index}].function.parameters")
    rules = [f"call{i}: {_literal(_prefix(t.function.name))} %json "
             f"{json.dumps({**_parameters(t), 'x-guidance': COMPACT}, sort_keys=True)} \"}}\""
             for i, t in enumerate(chosen)]
    lark = "\n".join(["start: " + " | ".join(f"call{i}" for i in range(len(chosen))), *rules])
    return Constraint("tool", _compiled(lambda: LLMatcher.grammar_from_lark(lark), "tool_choice"))


def _prefix(name: str) -> str:
    return '{"tool": ' + json.dumps(name) + ', "arguments": '


def _literal(text: str) -> str:
    return json.dumps(text)  # a Lark string literal: JSON's escapes are Lark's


def _parameters(tool: ToolSpec) -> dict[str, Any]:
    return tool.function.parameters or JSON_OBJECT


def _compiled(build: Any, field: str) -> str:
    try:
        grammar = str(build())
    except ValueError as exc:
        raise RequestRefused(field, f"not a JSON schema: {exc}") from None
    problem = LLMatcher.validate_grammar(grammar)
    if problem:
        raise RequestRefused(field, f"the decoder cannot enforce this: {problem.strip()[:500]}")
    return grammar
