"""JSON answers checked against JSON Schemas: `genui` UI specs and `agent` tool calls.

Both go through the same three steps, and each step is a sub-score, so a rubric can tell
"not JSON" from "JSON of the wrong shape" from "valid but not what was asked":
1. parse: the first fenced block, else the first {...} span of the answer;
2. validate against the schema (jsonschema, Draft 2020-12);
3. compare with what the task asked for.
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from harness.checks.result import CheckResult, extract_block


def parse_json_object(answer: str) -> dict[str, Any] | None:
    text = extract_block(answer)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        value = json.loads(text[start : end + 1])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _valid(schema: dict[str, Any], value: Any) -> bool:
    return not any(Draft202012Validator(schema).iter_errors(value))


def check_ui_spec(spec: dict[str, Any], answer: str) -> CheckResult:
    doc = parse_json_object(answer)
    schema_ok = doc is not None and _valid(spec["schema"], doc)
    got = doc.get("components", []) if doc is not None and schema_ok else []
    want = spec["expect"]
    same = sum(1 for g, w in zip(got, want, strict=False) if g == w)
    scores = {
        "json_ok": float(doc is not None),
        "schema_ok": float(schema_ok),
        # matched positions over the longer list: extra or missing components both cost
        "components_match": same / max(len(got), len(want)),
    }
    ok = schema_ok and got == want
    why = "" if ok else ("not json" if doc is None else "schema" if not schema_ok else "content")
    partial = 1.0 if ok else 0.5 * scores["schema_ok"] + 0.5 * scores["components_match"]
    return CheckResult("ui_spec", ok, partial, scores, why)


def check_tool_call(spec: dict[str, Any], answer: str) -> CheckResult:
    doc = parse_json_object(answer)
    shape_ok = doc is not None and set(doc) == {"tool", "arguments"}
    tool = doc.get("tool") if doc is not None and shape_ok else None
    allowed = isinstance(tool, str) and tool in spec["allowed"]
    args = doc.get("arguments") if doc is not None and shape_ok else None
    schema_ok = allowed and _valid(spec["allowed"][tool], args)
    want = spec["expect"]
    right_tool = tool == want["tool"]
    matched = sum(1 for k, v in want["arguments"].items()
                  if right_tool and isinstance(args, dict) and _same(args.get(k), v))
    scores = {
        "json_ok": float(shape_ok),
        "allowed_tool": float(allowed),
        "schema_ok": float(schema_ok),
        "right_tool": float(right_tool),
        "args_match": matched / len(want["arguments"]),
    }
    ok = schema_ok and right_tool and matched == len(want["arguments"])
    why = ("" if ok else "not a call" if not shape_ok else "not allowed" if not allowed
           else "schema" if not schema_ok else "wrong tool" if not right_tool else "arguments")
    partial = 1.0 if ok else (0.2 * scores["schema_ok"] + 0.4 * scores["right_tool"]
                              + 0.4 * scores["args_match"])
    call = {"tool": tool, "arguments": args} if shape_ok and isinstance(tool, str) else None
    return CheckResult("tool_call", ok, partial, scores, why, call)


def _same(got: Any, want: Any) -> bool:
    """Values as a user would judge them: case and surrounding space in strings don't matter."""
    if isinstance(want, str):
        return isinstance(got, str) and got.strip().lower() == want.lower()
    if isinstance(want, bool) or isinstance(got, bool):
        return got is want
    return isinstance(got, int | float) and got == want
