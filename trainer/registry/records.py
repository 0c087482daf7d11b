"""The registry's rows exactly as stored, read in bulk: what an auditor compares with the
events that created them (``adapter.registered``, ``adapter.status_changed``,
``alias.moved``, ``base_model.registered``, and the protected aliases' ``alias.*`` steps).
One query per kind of row, never one per row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.engine import Engine

from trainer.registry.tables import (
    adapter_contract_versions,
    adapter_status_changes,
    adapter_versions,
    alias_move_decisions,
    alias_move_requests,
    alias_moves,
    alias_protections,
    base_models,
)

_CHUNK = 500  # ids per IN (...)

Row = dict[str, Any]


class RegistryRecords:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def adapters(self, specialist: str | None = None) -> list[Row]:
        """Adapter versions (of ``specialist``, else all), by specialist and version."""
        query = select(adapter_versions).order_by(adapter_versions.c.specialist, adapter_versions.c.version)
        if specialist is not None:
            query = query.where(adapter_versions.c.specialist == specialist)
        return self._rows(query)

    def contract_links(self, adapter_ids: Iterable[str] | None = None) -> dict[str, set[tuple[str, int]]]:
        """(contract name, version) of each adapter's rewards, by adapter id."""
        t = adapter_contract_versions
        links: dict[str, set[tuple[str, int]]] = {}
        for row in self._in(select(t), t.c.adapter_id, adapter_ids):
            ref = (row["contract_name"], int(row["contract_version"]))
            links.setdefault(row["adapter_id"], set()).add(ref)
        return links

    def status_changes(self, adapter_ids: Iterable[str] | None = None) -> list[Row]:
        t = adapter_status_changes
        return sorted(self._in(select(t), t.c.adapter_id, adapter_ids), key=lambda r: r["position"])

    def alias_moves(self, specialist: str | None = None) -> list[Row]:
        query = select(alias_moves).order_by(alias_moves.c.position)
        if specialist is not None:
            query = query.where(alias_moves.c.specialist == specialist)
        return self._rows(query)

    def alias_protections(self, specialist: str | None = None) -> list[Row]:
        return self._of_specialist(alias_protections, specialist)

    def move_requests(self, specialist: str | None = None) -> list[Row]:
        return self._of_specialist(alias_move_requests, specialist)

    def move_decisions(self, specialist: str | None = None) -> list[Row]:
        """Each decision with its request's specialist and alias (decisions name only the request)."""
        d, r = alias_move_decisions, alias_move_requests
        query = (select(d, r.c.specialist, r.c.alias).join(r, r.c.request_id == d.c.request_id)
                 .order_by(d.c.position))
        if specialist is not None:
            query = query.where(r.c.specialist == specialist)
        return self._rows(query)

    def _of_specialist(self, table: Any, specialist: str | None) -> list[Row]:
        query = select(table).order_by(table.c.position)
        if specialist is not None:
            query = query.where(table.c.specialist == specialist)
        return self._rows(query)

    def base_models(self, names: Iterable[str] | None = None) -> list[Row]:
        return sorted(self._in(select(base_models), base_models.c.name, names), key=lambda r: r["name"])

    def _rows(self, query: Select[Any]) -> list[Row]:
        with self.engine.connect() as conn:
            return [dict(r._mapping) for r in conn.execute(query)]

    def _in(self, query: Select[Any], column: Any, values: Iterable[str] | None) -> list[Row]:
        if values is None:
            return self._rows(query)
        wanted = sorted(set(values))
        return [row for start in range(0, len(wanted), _CHUNK)
                for row in self._rows(query.where(column.in_(wanted[start:start + _CHUNK])))]
