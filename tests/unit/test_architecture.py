"""The shape of the house, read from the source: layers, table ownership, no import circles.

Every import is counted, also those inside functions and under ``TYPE_CHECKING``: an
import that only runs later is still a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom up: a package may import only packages listed before it.
LAYERS = ("kernel", "events", "contract", "evaluators", "trainer", "audit", "access", "harness",
          "serving", "integrations", "migrations", "hcp", "console", "api", "cli")
COMPOSITION_ROOT = "hcp"
ENTRY_POINTS = ("console", "api", "cli")  # above the composition root
CORES = ("kernel", "events", "contract", "evaluators", "trainer", "audit", "access", "harness",
         "serving", "integrations")
# Inside trainer/, bottom up (its top-level modules, e.g. ``journal``, come first).
TRAINER_LAYERS = ("journal", "ml", "registry", "datasets", "gate", "runs", "triggers")
# Migrations describe every table; that is their job.
MAY_READ_ANY_TABLE = ("migrations",)


def modules() -> Iterator[tuple[str, Path]]:
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            yield ".".join(relative.parts).removesuffix(".__init__"), path


@cache
def imports_of(path: Path) -> tuple[str, ...]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return tuple(found)


def ours(name: str) -> bool:
    return name.split(".")[0] in LAYERS


def test_no_package_imports_one_above_it() -> None:
    upward = [f"{module} imports {name}"
              for module, path in modules() for name in imports_of(path)
              if ours(name) and LAYERS.index(name.split(".")[0]) > LAYERS.index(module.split(".")[0])]
    assert upward == []


def test_no_core_package_imports_the_composition_root() -> None:
    wrong = [f"{module} imports {name}" for module, path in modules() if module.split(".")[0] in CORES
             for name in imports_of(path) if name.split(".")[0] in (COMPOSITION_ROOT, *ENTRY_POINTS)]
    assert wrong == []


def test_the_package_graph_has_no_cycle() -> None:
    edges = {(m.split(".")[0], n.split(".")[0]) for m, p in modules() for n in imports_of(p) if ours(n)}
    assert _cycle({a for a, b in edges if a != b} | {b for a, b in edges}, edges) is None


def test_trainer_sub_packages_have_no_import_circle() -> None:
    def group(name: str) -> str | None:
        parts = name.split(".")
        return parts[1] if parts[0] == "trainer" and len(parts) > 1 else None

    edges = {(group(m), group(n)) for m, p in modules() for n in imports_of(p)
             if group(m) and group(n) and group(m) != group(n)}
    assert _cycle({g for edge in edges for g in edge}, edges) is None  # type: ignore[arg-type]
    upward = [f"trainer.{a} imports trainer.{b}" for a, b in edges
              if TRAINER_LAYERS.index(b) > TRAINER_LAYERS.index(a)]  # type: ignore[arg-type]
    assert upward == []


def test_cli_modules_have_no_import_circle() -> None:
    commands = {module for module, _ in modules() if module.split(".")[0] == "cli"}
    edges = {(module, name) for module, path in modules() if module in commands
             for name in imports_of(path) if name in commands and name != module}
    assert _cycle(commands, edges) is None


@cache
def table_owners() -> dict[str, str]:
    """Table name -> the package (trainer: sub-package) whose ``tables`` module declares it."""
    from migrations.schema import TABLE_MODULES, load_all_tables

    load_all_tables()
    owners: dict[str, str] = {}
    for module_name in TABLE_MODULES:
        module = __import__(module_name, fromlist=["*"])
        for value in vars(module).values():
            name = getattr(value, "name", None)
            if name and type(value).__name__ == "Table":
                owners[name] = _owner(module_name)
    return owners


def _owner(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "trainer" and len(parts) > 2 else parts[0]


def test_only_its_owner_imports_a_packages_tables() -> None:
    foreign = [f"{module} imports {name}" for module, path in modules()
               for name in imports_of(path) if name.endswith(".tables") or ".tables." in name
               if _owner(module) != _owner(name.split(".tables")[0] + ".tables")
               and module.split(".")[0] not in MAY_READ_ANY_TABLE]
    assert foreign == []


def test_no_sql_text_names_another_packages_table() -> None:
    owners = table_owners()
    pattern = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(\w+)", re.IGNORECASE)
    foreign = []
    for module, path in modules():
        if module.split(".")[0] in MAY_READ_ANY_TABLE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for table in pattern.findall(node.value):
                    if table in owners and owners[table] != _owner(module):
                        foreign.append(f"{module} names table {table} (owned by {owners[table]})")
    assert foreign == []


def _cycle(nodes: set[str], edges: set[tuple[str, str]]) -> list[str] | None:
    """A cycle as a path, or None (depth-first search)."""
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a != b:
            out.setdefault(a, []).append(b)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(out.get(node, [])):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if state.get(nxt) is None and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for node in sorted(nodes):
        if state.get(node) is None and (found := visit(node, [])):
            return found
    return None


@pytest.mark.parametrize("broken", [{("a", "b"), ("b", "a")}, {("a", "b"), ("b", "c"), ("c", "a")}])
def test_the_cycle_finder_finds_cycles(broken: set[tuple[str, str]]) -> None:
    assert _cycle({"a", "b", "c"}, broken) is not None
    assert _cycle({"a", "b", "c"}, {("a", "b"), ("b", "c")}) is None
