"""Every table is accounted for: the log, a chained record, working state, or a projection
written only by its projector; and every type the server writes is projected or says why
not, and is spelled once (its class's ``TYPE``).

Read from the metadata and the source, so a new table, a new event type or a new
``table.insert()`` outside the projectors fails here before it reaches an audit that
cannot see it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Table

from events.server_events import SERVER_TYPES
from hcp import projections as roles
from kernel.db import metadata
from migrations.schema import TABLE_MODULES, load_all_tables

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kernel", "events", "contract", "evaluators", "trainer", "audit", "access", "harness",
            "serving", "hcp", "console", "api", "cli")
PROJECTORS = ("events/projections",)  # the only code that writes projected rows
WRITES = {"insert", "update", "delete"}
SQL_WRITE = re.compile(r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", re.IGNORECASE)


def sources(skip: tuple[str, ...] = PROJECTORS) -> Iterator[tuple[Path, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if not relative.startswith(skip):
                yield path, ast.parse(path.read_text(), str(path))


def projected() -> dict[str, Table]:
    return {p.name: p.table for p in roles.PROJECTIONS}


def test_every_table_is_the_log_a_record_working_state_or_a_projection() -> None:
    load_all_tables()
    kinds = {"log": set(roles.LOG), "record": set(roles.RECORDS), "working": set(roles.WORKING),
             "projection": set(projected())}
    for table in sorted(metadata.tables):
        claimed = [kind for kind, tables in kinds.items() if table in tables]
        assert len(claimed) == 1, f"{table} is {claimed or 'in no kind'}: say in hcp/projections.py what " \
                                  "vouches for its rows (a projection, a chained record, working state)"
    named = set().union(*kinds.values())
    assert named <= set(metadata.tables), f"not tables: {sorted(named - set(metadata.tables))}"
    assert all(roles.RECORDS.values()) and all(roles.WORKING.values())


def test_working_columns_exist_and_say_why() -> None:
    for projection in roles.PROJECTIONS:
        for column, why in projection.working.items():
            assert column in projection.table.c and why, f"{projection.name}.{column}"
            assert column not in projection.key_columns


def test_projected_tables_are_written_only_by_their_projectors() -> None:
    tables = projected()
    found = []
    for path, tree in sources():
        names = _table_names(tree, tables)
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (table := _written(node, names)):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} writes {table}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node not in prose:
                found += [f"{path.relative_to(ROOT)}:{node.lineno} writes {t} in SQL"
                          for t in SQL_WRITE.findall(node.value) if t in tables]
    assert found == [], "write through the projector (events.projections.sql.write_in), or set a " \
                        "working column with set_working_in"


def test_every_server_event_type_is_projected_or_says_why_not() -> None:
    load_all_tables()
    declared = _declared_types()
    consumed = {cls.TYPE for p in roles.PROJECTIONS for cls in p.events}
    loose = sorted(declared - consumed - set(roles.UNPROJECTED))
    assert loose == [], f"not projected and not in hcp/projections.py UNPROJECTED: {loose}"
    assert set(roles.UNPROJECTED) <= declared and all(roles.UNPROJECTED.values())
    assert consumed <= set(SERVER_TYPES)


def test_a_server_event_type_is_spelled_once() -> None:
    types = _declared_types()
    twice = [f"{path.relative_to(ROOT)}:{node.lineno} spells {node.value!r}"
             for path, tree in sources(skip=()) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and node.value in types
             and not _is_type_of_a_class(tree, node)]
    assert twice == [], "name the type by its class (Cls.TYPE) instead"


def _docstrings(tree: ast.Module) -> set[ast.AST]:
    """The docstrings (prose may quote SQL) of a module, its classes and functions."""
    found: set[ast.AST] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            found.add(body[0].value)
    return found


def _declared_types() -> set[str]:
    """Every ``TYPE = "..."`` of a class in the source: the server's event types."""
    found = set()
    for _, tree in sources(skip=()):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if _is_type_assignment(item):
                        found.add(item.value.value)  # type: ignore[attr-defined]
    return found


def _is_type_assignment(item: ast.stmt) -> bool:
    return (isinstance(item, ast.Assign) and len(item.targets) == 1
            and isinstance(item.targets[0], ast.Name) and item.targets[0].id == "TYPE"
            and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str))


def _is_type_of_a_class(tree: ast.Module, constant: ast.Constant) -> bool:
    return any(isinstance(node, ast.ClassDef) and any(_is_type_assignment(i) and i.value is constant  # type: ignore[attr-defined]
                                                      for i in node.body)
               for node in ast.walk(tree))


def _table_names(tree: ast.Module, tables: dict[str, Table]) -> dict[str, str]:
    """Local names bound to projected tables by ``from <pkg>.tables import x [as y]``."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in TABLE_MODULES:
            module = __import__(node.module, fromlist=["*"])
            for alias in node.names:
                value = getattr(module, alias.name, None)
                if isinstance(value, Table) and value.name in tables:
                    names[alias.asname or alias.name] = value.name
    return names


def _written(call: ast.Call, names: dict[str, str]) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in WRITES and isinstance(func.value, ast.Name):
        return names.get(func.value.id)
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if called in WRITES | {"insert_rows", "copy_rows"}:
        for arg in call.args[:2]:
            if isinstance(arg, ast.Name) and arg.id in names:
                return names[arg.id]
    return None
