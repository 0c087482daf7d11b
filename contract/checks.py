"""Checks that span fields: expressions, duplicate ids, references between sections.

They run on the raw TOML data rather than on the validated model so that they still run
when the schema check failed somewhere else: the author gets every problem at once.
Anything of the wrong shape is skipped here, because the schema check reports it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from contract import cel_scan, cel_schema, cel_types, rubric
from contract.cel_schema import INPUT_TYPES, JUDGE_TYPE, RESULT_TYPES, T, record
from contract.problems import Problem
from contract.vocabulary import (
    INPUT_VARIABLES,
    RESULT_VARIABLES,
    WHEN_VARIABLES,
    is_known_event_type,
)

NUMBER, TRUTH = "a number", "a bool"
# Every expression is paid for on every subject (and compiled on every validation), and the
# rubric's deadline is per expression: these caps bound a contract's cost per subject. A
# rubric that needs more items than this can combine conditions inside fewer expressions.
MAX_CRITERIA = 20
MAX_GATES = 20
MAX_JUDGES = 8  # each is a model call per subject: a few at most
MAX_ITEMS = {"criteria": MAX_CRITERIA, "gates": MAX_GATES, "judges": MAX_JUDGES}


def semantic_problems(data: dict[str, Any]) -> list[Problem]:
    evaluation = _table(data, "evaluation")
    harness = _table(data, "harness")
    training = _table(data, "training")
    return [
        *_count_problems(evaluation),
        *_expression_problems(evaluation, training),
        *_duplicate_problems(evaluation),
        *_reference_problems(harness, evaluation, training),
    ]


def _count_problems(evaluation: dict[str, Any]) -> Iterator[Problem]:
    for section, most in MAX_ITEMS.items():
        count = len(list(_items(evaluation, section)))
        if count > most:
            yield Problem("limit", f"evaluation.{section}",
                          f"{count} {section} exceed the limit of {most} per contract")


def _expression_problems(evaluation: dict[str, Any], training: dict[str, Any]) -> Iterator[Problem]:
    judges = _judge_type(evaluation)
    for section in ("criteria", "gates"):
        noun = "criterion" if section == "criteria" else "gate"
        # Past the cap nothing is compiled: a refused draft must not cost what it would.
        for index, item in list(_items(evaluation, section))[:MAX_ITEMS[section]]:
            label = f"{noun} {item.get('id', index)!r}"
            path = f"evaluation.{section}[{index}].expression"
            wanted = NUMBER if section == "criteria" else TRUTH
            yield from _compiled(item.get("expression"), path, label, INPUT_VARIABLES, wanted,
                                 judges)
    when = _table(evaluation, "applies_to").get("when")
    yield from _compiled(when, "evaluation.applies_to.when", "applies_to.when", WHEN_VARIABLES,
                         TRUTH, judges)
    eligible_vars = INPUT_VARIABLES + RESULT_VARIABLES
    yield from _compiled(training.get("eligible"), "training.eligible", "eligibility", eligible_vars,
                         TRUTH, judges)


def _judge_type(evaluation: dict[str, Any]) -> T:
    """``judge`` as this document's expressions see it: a field per declared judge."""
    ids = [item["id"] for _, item in _items(evaluation, "judges") if isinstance(item.get("id"), str)]
    return record(**dict.fromkeys(ids, JUDGE_TYPE))


def _compiled(source: Any, path: str, label: str, known: tuple[str, ...],
              wanted: str, judges: T) -> Iterator[Problem]:
    if not isinstance(source, str) or not source.strip():
        return  # missing or of the wrong type: the schema check reports it
    text = source.strip()
    try:
        rubric.compile_expression(text, known)
    except rubric.ExpressionError as exc:
        yield Problem("expression", path, f"{label}: {exc.message}", expression=text,
                      expression_line=exc.line, expression_column=exc.column)
        return
    yield from _type_problems(text, path, label, known, wanted, judges)


def _type_problems(text: str, path: str, label: str, known: tuple[str, ...],
                   wanted: str, judges: T) -> Iterator[Problem]:
    """Mistakes of type CEL would make on every subject, found before publishing."""
    variables = {name: kind for name, kind in {**INPUT_TYPES, **RESULT_TYPES, "judge": judges}.items()
                 if name in known}
    try:
        result = cel_types.infer(text, variables)
    except cel_types.TypeMistake as exc:
        line, column = cel_scan.line_column(text, exc.offset)
        yield Problem("type", path, f"{label}: {exc.message}", expression=text,
                      expression_line=line, expression_column=column)
        return
    numeric = result.kind in cel_schema.NUMERIC
    wrong = (result.kind in cel_schema.CONCRETE or result.kind == "null") and (
        (wanted == NUMBER and not numeric) or (wanted == TRUTH and result.kind != "bool"))
    if wrong:
        yield Problem("type", path, f"{label}: must yield {wanted}, but yields {result.kind}",
                      expression=text, expression_line=1, expression_column=1)


def _duplicate_problems(evaluation: dict[str, Any]) -> Iterator[Problem]:
    seen: dict[str, str] = {}
    judges: set[str] = set()
    for index, item in _items(evaluation, "judges"):
        if isinstance(item.get("id"), str) and item["id"] in judges:
            yield Problem("duplicate", f"evaluation.judges[{index}].id",
                          f"judge id {item['id']!r} is declared twice")
        judges.add(item.get("id"))  # type: ignore[arg-type]
    for section in ("criteria", "gates"):
        for index, item in _items(evaluation, section):
            item_id = item.get("id")
            if not isinstance(item_id, str):
                continue
            path = f"evaluation.{section}[{index}].id"
            if item_id in seen:
                message = f"id {item_id!r} is already used by {seen[item_id]}"
                yield Problem("duplicate", path, message)
            else:
                seen[item_id] = f"evaluation.{section}[{index}]"


def _reference_problems(
    harness: dict[str, Any], evaluation: dict[str, Any], training: dict[str, Any]
) -> Iterator[Problem]:
    specialists = set(_table(harness, "specialists"))
    allowlist = set(_strings(harness.get("tool_allowlist")))
    default = _table(harness, "router").get("default_specialist")
    if isinstance(default, str) and specialists and default not in specialists:
        msg = f"default specialist {default!r} is not declared in harness.specialists"
        yield Problem("reference", "harness.router.default_specialist", msg)
    for name, slot in _table(harness, "specialists").items():
        for tool in _strings(slot.get("tools") if isinstance(slot, dict) else None):
            if tool not in allowlist:
                msg = f"tool {tool!r} is not in harness.tool_allowlist"
                yield Problem("reference", f"harness.specialists.{name}.tools", msg)
    applies = _table(evaluation, "applies_to")
    for name in _strings(applies.get("specialists")):
        if name not in specialists:
            msg = f"specialist {name!r} is not declared in harness.specialists"
            yield Problem("reference", "evaluation.applies_to.specialists", msg)
    for event_type in _strings(applies.get("event_types")):
        if not is_known_event_type(event_type):
            msg = f"unknown event type {event_type!r} (custom types start with 'x.')"
            yield Problem("reference", "evaluation.applies_to.event_types", msg)
    yield from _trigger_problems(specialists, evaluation, training)


def _trigger_problems(
    specialists: set[str], evaluation: dict[str, Any], training: dict[str, Any]
) -> Iterator[Problem]:
    ids = {item.get("id") for _, item in _items(evaluation, "criteria")} | {"*"}
    for name, policy in _table(training, "triggers").items():
        if name not in specialists:
            msg = f"trigger for {name!r}, which is not declared in harness.specialists"
            yield Problem("reference", f"training.triggers.{name}", msg)
        tolerances = policy.get("regression_tolerance") if isinstance(policy, dict) else None
        for key in tolerances if isinstance(tolerances, dict) else {}:
            if key not in ids:
                msg = f"regression tolerance for unknown criterion {key!r}"
                yield Problem("reference", f"training.triggers.{name}.regression_tolerance", msg)


def _table(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _items(table: dict[str, Any], key: str) -> Iterator[tuple[int, dict[str, Any]]]:
    value = table.get(key)
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, dict):
            yield index, item


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
_KEY = re.compile(r"^\s*([A-Za-z0-9_\-\".]+?)\s*=")
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def locate(toml_text: str, path: str) -> int | None:
    """Best-effort 1-based line of `path` (e.g. "evaluation.criteria[1].weight") in the text.

    Understands table headers, arrays of tables and plain or dotted keys; inline tables and
    multi-line values fall back to the line of the nearest enclosing header.
    """
    target = tuple(int(m[2]) if m[2] else m[1] for m in _PATH_PART.finditer(path))
    lines = _key_lines(toml_text)
    for length in range(len(target), 0, -1):
        if target[:length] in lines:
            return lines[target[:length]]
    return None


def _key_lines(toml_text: str) -> dict[tuple[Any, ...], int]:
    found: dict[tuple[Any, ...], int] = {}
    counts: dict[tuple[str, ...], int] = {}
    current: tuple[Any, ...] = ()
    in_multiline = False
    for number, line in enumerate(toml_text.splitlines(), start=1):
        quotes = line.count('"""') + line.count("'''")
        if in_multiline:
            in_multiline = quotes % 2 == 0
            continue
        header, key = _HEADER.match(line), _KEY.match(line)
        if header:
            parts = tuple(p.strip().strip('"') for p in header[2].split("."))
            if header[1] == "[[":
                counts[parts] = counts.get(parts, -1) + 1
                current = (*parts, counts[parts])
            else:
                current = parts
            found.setdefault(current, number)
        elif key:
            parts = tuple(p.strip().strip('"') for p in key[1].split("."))
            found.setdefault((*current, *parts), number)
        in_multiline = quotes % 2 == 1
    return found
