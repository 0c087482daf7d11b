"""A semantic diff of two contract documents: what changed in meaning, not in text.

Criteria and gates are matched by id (so reordering is no change), weights are compared
as shares of the total too (doubling every weight changes nothing the scores see, and
the diff says so), the tool allowlist is compared as a set, specialists and triggers by
name; every other setting is compared leaf by leaf with its old and new value.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from contract.document import content_hash
from contract.sections import ContractDocument, Criterion, Gate


@dataclass(frozen=True)
class Change:
    section: str  # contract | harness | evaluation | training
    item: str  # criterion | gate | tool | specialist | trigger | prompt | skill | setting
    kind: str  # added | removed | changed | reweighted | expression_changed | text_changed
    path: str  # e.g. "evaluation.criteria.brevity.weight", "harness.tool_allowlist"
    old: Any = None
    new: Any = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "item": self.item,
            "kind": self.kind,
            "path": self.path,
            "old": self.old,
            "new": self.new,
            "note": self.note,
        }


@dataclass(frozen=True)
class ContractDiff:
    old_hash: str
    new_hash: str
    changes: tuple[Change, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not self.changes

    def of_kind(self, section: str, item: str, kind: str) -> list[Change]:
        return [c for c in self.changes if (c.section, c.item, c.kind) == (section, item, kind)]

    def to_json(self) -> dict[str, Any]:
        return {
            "old_hash": self.old_hash,
            "new_hash": self.new_hash,
            "changes": [change.to_json() for change in self.changes],
        }

    def render(self) -> str:
        if self.empty:
            same = self.old_hash == self.new_hash
            return "no semantic changes" + (" (identical content hash)" if same else "")
        lines = [f"{len(self.changes)} semantic change(s)"]
        for section in ("contract", "harness", "evaluation", "training"):
            changes = [c for c in self.changes if c.section == section]
            if changes:
                lines.append(section)
                lines.extend(f"  {_render(change)}" for change in changes)
        return "\n".join(lines)


def diff_contracts(old: ContractDocument, new: ContractDocument) -> ContractDiff:
    """Everything that changed in meaning from `old` to `new`."""
    changes = [
        *_leaves("contract", "contract", _dump(old.contract), _dump(new.contract)),
        *_harness(old, new),
        *_items("criterion", old.evaluation.criteria, new.evaluation.criteria),
        *_items("gate", old.evaluation.gates, new.evaluation.gates),
        *_evaluation_settings(old, new),
        *_training(old, new),
    ]
    return ContractDiff(content_hash(old), content_hash(new), tuple(changes))


def _harness(old: ContractDocument, new: ContractDocument) -> list[Change]:
    before, after = _dump(old.harness), _dump(new.harness)
    tools_before, tools_after = set(before.pop("tool_allowlist")), set(after.pop("tool_allowlist"))
    changes = [
        Change("harness", "tool", "added", "harness.tool_allowlist", None, tool, f"tool {tool} allowed")
        for tool in sorted(tools_after - tools_before)
    ]
    changes += [
        Change(
            "harness",
            "tool",
            "removed",
            "harness.tool_allowlist",
            tool,
            None,
            f"tool {tool} no longer allowed",
        )
        for tool in sorted(tools_before - tools_after)
    ]
    changes += _named(
        "harness", "specialist", "harness.specialists", before.pop("specialists"), after.pop("specialists")
    )
    for item, key in (("prompt", "prompts"), ("skill", "skills")):
        changes += _texts(item, f"harness.{key}", before.pop(key), after.pop(key))
    return changes + _leaves("harness", "harness", before, after)


def _texts(item: str, path: str, before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """Prompts and skills by name; a stored text that changed shows as a unified diff."""
    changes: list[Change] = []
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a == b:
            continue
        where = f"{path}.{name}"
        if a is None or b is None:
            kind = "added" if a is None else "removed"
            changes.append(Change("harness", item, kind, where, _text_or_digest(a),
                                  _text_or_digest(b)))
            continue
        old, new = _text_or_digest(a), _text_or_digest(b)
        if isinstance(a, dict) and isinstance(b, dict):
            lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"{name} (old)",
                                         f"{name} (new)", lineterm="")
            changes.append(Change("harness", item, "text_changed", where, old, new, "\n".join(lines)))
        else:
            same = _digest(a) == _digest(b)
            note = ("the same content, now stored as text" if same and isinstance(b, dict) else
                    "the same content, now only a digest" if same else
                    "changed; only a digest on one side, so the texts cannot be compared")
            changes.append(Change("harness", item, "changed", where, old, new, note))
    return changes


def _digest(value: Any) -> Any:
    return value["digest"] if isinstance(value, dict) else value


def _text_or_digest(value: Any) -> Any:
    return value["text"] if isinstance(value, dict) else value


def _items(item: str, old: list[Criterion] | list[Gate], new: list[Criterion] | list[Gate]) -> list[Change]:
    path = "evaluation.criteria" if item == "criterion" else "evaluation.gates"
    before, after = {i.id: i for i in old}, {i.id: i for i in new}
    old_total = sum(getattr(i, "weight", 0.0) for i in old) or 1.0
    new_total = sum(getattr(i, "weight", 0.0) for i in new) or 1.0
    changes: list[Change] = []
    for item_id in sorted(before.keys() | after.keys()):
        a, b = before.get(item_id), after.get(item_id)
        where = f"{path}.{item_id}"
        if a is None:
            changes.append(Change("evaluation", item, "added", where, None, _dump(b)))
        elif b is None:
            changes.append(Change("evaluation", item, "removed", where, _dump(a), None))
        else:
            changes += _item_changes(item, where, a, b, (old_total, new_total))
    return changes


def _item_changes(
    item: str, where: str, a: Criterion | Gate, b: Criterion | Gate, totals: tuple[float, float]
) -> list[Change]:
    changes = []
    if isinstance(a, Criterion) and isinstance(b, Criterion) and a.weight != b.weight:
        share = f"share {a.weight / totals[0]:.0%} -> {b.weight / totals[1]:.0%}"
        changes.append(Change("evaluation", item, "reweighted", f"{where}.weight", a.weight, b.weight, share))
    if a.expression != b.expression:
        changes.append(
            Change(
                "evaluation", item, "expression_changed", f"{where}.expression", a.expression, b.expression
            )
        )
    if a.description != b.description:
        changes.append(
            Change("evaluation", item, "changed", f"{where}.description", a.description, b.description)
        )
    return changes


def _evaluation_settings(old: ContractDocument, new: ContractDocument) -> list[Change]:
    exclude = {"criteria", "gates"}
    before = _dump(old.evaluation, exclude)
    after = _dump(new.evaluation, exclude)
    return _leaves("evaluation", "evaluation", before, after)


def _training(old: ContractDocument, new: ContractDocument) -> list[Change]:
    before, after = _dump(old.training), _dump(new.training)
    triggers = _named(
        "training", "trigger", "training.triggers", before.pop("triggers"), after.pop("triggers")
    )
    return _leaves("training", "training", before, after) + triggers


def _named(section: str, item: str, path: str, before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    changes: list[Change] = []
    for name in sorted(before.keys() | after.keys()):
        where = f"{path}.{name}"
        if name not in before:
            changes.append(Change(section, item, "added", where, None, after[name]))
        elif name not in after:
            changes.append(Change(section, item, "removed", where, before[name], None))
        else:
            # A setting appearing inside an existing specialist or trigger changes that item.
            changes += [
                Change(section, item, "changed", c.path, c.old, c.new)
                for c in _leaves(section, where, before[name], after[name])
            ]
    return changes


def _leaves(section: str, prefix: str, before: Any, after: Any) -> list[Change]:
    flat_before, flat_after = _flatten(before, prefix), _flatten(after, prefix)
    changes = []
    for path in sorted(flat_before.keys() | flat_after.keys()):
        a, b = flat_before.get(path), flat_after.get(path)
        if a != b:
            kind = "added" if path not in flat_before else "removed" if path not in flat_after else "changed"
            changes.append(Change(section, "setting", kind, path, a, b))
    return changes


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}"))
        return flat
    return {prefix: value}


def _dump(model: Any, exclude: set[str] | None = None) -> dict[str, Any]:
    return dict(model.model_dump(mode="json", exclude=exclude))


def _render(change: Change) -> str:
    name = change.path.rsplit(".", 1)[-1]
    if change.item in ("criterion", "gate") and change.kind in ("added", "removed"):
        body = change.new if change.kind == "added" else change.old
        weight = f" weight {body['weight']:g}" if "weight" in body else ""
        sign = "+" if change.kind == "added" else "-"
        return f"{sign} {change.item} {name}{weight}: {body['expression']}"
    if change.kind == "reweighted":
        item_id = change.path.split(".")[-2]
        return f"~ criterion {item_id} reweighted {change.old:g} -> {change.new:g} ({change.note})"
    if change.kind == "text_changed":
        body = "\n".join(f"      {line}" for line in change.note.splitlines())
        return f"~ {change.item} {name} text\n{body}"
    if change.item in ("prompt", "skill"):
        sign = {"added": "+", "removed": "-"}.get(change.kind, "~")
        note = f" ({change.note})" if change.note else ""
        return f"{sign} {change.item} {name}: {_short(change.old)} -> {_short(change.new)}{note}"
    if change.kind == "expression_changed":
        item_id = change.path.split(".")[-2]
        return f"~ {change.item} {item_id} expression\n      - {change.old}\n      + {change.new}"
    if change.note:
        return f"{'+' if change.kind == 'added' else '-'} {change.note}"
    if change.kind in ("added", "removed") and change.item != "setting":
        return f"{'+' if change.kind == 'added' else '-'} {change.item} {name}"
    return f"~ {change.path}: {_short(change.old)} -> {_short(change.new)}"


def _short(value: Any) -> str:
    text = "(unset)" if value is None else repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."
