"""docs/contract-authoring.md documents every key the example contracts use, and every key
of the trigger policy and of the training hyper-parameters.

A key is documented when it is named (inside backticks) in the first column of a table
row of its section of "The document" (`[contract]`, `[harness]`, `[evaluation]`,
`[training]`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.policy import TriggerPolicy
from trainer.ml.hyper import HyperParams

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "contract-authoring.md"
EXAMPLES = sorted((ROOT / "examples" / "contracts").glob("*.toml"))
# Tables whose keys are names the author chooses (specialists, prompts, skills, criterion
# ids), not keys of the format: their children are not looked up, their own keys are.
NAMED_BY_AUTHOR = ("harness.specialists", "harness.prompts", "harness.skills", "training.triggers")
NAMED_BY_AUTHOR_ANYWHERE = ("regression_tolerance",)


def documented() -> dict[str, set[str]]:
    """Section (`contract`, `harness`, ...) -> every name in its tables' first column."""
    sections: dict[str, set[str]] = {}
    current: str | None = None
    for line in DOC.read_text().splitlines():
        heading = re.fullmatch(r"### `\[(\w+)\]`", line)
        if heading:
            current = heading[1]
            sections[current] = set()
        elif line.startswith(("## ", "### ")):
            current = None
        elif current and line.startswith("| ") and not line.startswith("| ---"):
            first_cell = line.split(" | ")[0]
            for span in re.findall(r"`([^`]*)`", first_cell):
                sections[current].update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span))
    return sections


def keys_of(table: dict[str, Any], path: str = "") -> Iterator[tuple[str, str]]:
    """(path of the key, the key) for every key in a TOML document, recursively."""
    for key, value in table.items():
        here = f"{path}.{key}" if path else key
        by_author = path in NAMED_BY_AUTHOR or path.rsplit(".", 1)[-1] in NAMED_BY_AUTHOR_ANYWHERE
        if not by_author:
            yield here, key
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, dict):
                yield from keys_of(child, here)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_key_an_example_contract_uses_is_documented(example: Path) -> None:
    sections = documented()
    assert set(sections) == {"contract", "harness", "evaluation", "training"}
    undocumented = [path for path, key in keys_of(tomllib.loads(example.read_text()))
                    if "." in path and key not in sections[path.split(".")[0]]]
    assert undocumented == [], (
        f"{example.name} uses keys docs/contract-authoring.md does not document: "
        f"{undocumented}; add a row for each to the table of its section")


def test_the_examples_are_found() -> None:
    assert {p.name for p in EXAMPLES} >= {"default.toml", "harness.toml"}


def test_every_trigger_policy_and_hyper_parameter_key_is_documented() -> None:
    training = documented()["training"]
    hyper_keys = set(HyperParams.__dataclass_fields__)
    missing = sorted((set(TriggerPolicy.model_fields) | hyper_keys) - training)
    assert missing == [], f"[training] in docs/contract-authoring.md lacks rows for {missing}"


def test_the_walk_skips_names_authors_choose_and_keeps_format_keys() -> None:
    doc = {"harness": {"specialists": {"chat": {"keywords": []}}},
           "training": {"triggers": {"coding": {"hyper": {"rank": 8},
                                                "regression_tolerance": {"passed": 0.0}}}}}
    assert [path for path, _ in keys_of(doc)] == [
        "harness", "harness.specialists", "harness.specialists.chat.keywords", "training",
        "training.triggers", "training.triggers.coding.hyper", "training.triggers.coding.hyper.rank",
        "training.triggers.coding.regression_tolerance"]
