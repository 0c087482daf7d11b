"""The ancestry closure of adapter versions, and the registry's batched lineage reads.

A version's ancestors never change once it is registered, so its registration's
projector (``trainer.registry.projections``) writes them all at once (its parent's
rows, one deeper, plus itself at depth 0). Upstream of a version is then one index
range, and "every descendant of these versions" one indexed join, however deep the
chains grow.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from kernel.db import reading
from kernel.errors import NotFound
from trainer.registry.model import AdapterVersion, BaseModelEntry, ContractRef
from trainer.registry.rows import adapter_from_row, base_from_row
from trainer.registry.tables import (
    adapter_ancestry,
    adapter_contract_versions,
    adapter_status_changes,
    adapter_versions,
    base_models,
)

_CHUNK = 500  # ids per IN (...)


def adapters_in(conn: Connection, adapter_ids: Iterable[str]) -> list[AdapterVersion]:
    """The stored versions among ``adapter_ids`` (three queries per 500, not three per
    version), effective status included, contract refs without their hashes."""
    ids = sorted(set(adapter_ids))
    found: list[AdapterVersion] = []
    for chunk in _chunks(ids):
        rows = conn.execute(select(adapter_versions)
                            .where(adapter_versions.c.adapter_id.in_(chunk))).all()
        latest: dict[str, str] = {}
        changes = (select(adapter_status_changes.c.adapter_id, adapter_status_changes.c.status)
                   .where(adapter_status_changes.c.adapter_id.in_(chunk))
                   .order_by(adapter_status_changes.c.position))
        for adapter_id, status in conn.execute(changes):
            latest[adapter_id] = status  # in position order: the last one stays
        refs: dict[str, list[ContractRef]] = defaultdict(list)
        acv = adapter_contract_versions.c
        links = (select(acv.adapter_id, acv.contract_name, acv.contract_version)
                 .where(acv.adapter_id.in_(chunk))
                 .order_by(acv.adapter_id, acv.contract_name, acv.contract_version))
        for adapter_id, name, version in conn.execute(links):
            refs[adapter_id].append(ContractRef(name, version))
        found += [adapter_from_row(r, latest.get(r.adapter_id), refs[r.adapter_id]) for r in rows]
    return found


@dataclass(frozen=True)
class AdapterBrief:
    """A version without its JSON columns: enough to name it in a long list."""

    adapter_id: str
    specialist: str
    version: int
    status: str  # effective: the latest status change, else as registered


class Ancestry:
    """Which versions descend from which, and which trained on what (ids only)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def ancestors(self, adapter_id: str, conn: Connection | None = None) -> list[str]:
        """The version itself, its parent, … its root.

        Raises:
            NotFound: no such version.
        """
        query = (select(adapter_ancestry.c.ancestor_id)
                 .where(adapter_ancestry.c.descendant_id == adapter_id)
                 .order_by(adapter_ancestry.c.depth))
        with reading(self.engine, conn) as c:
            chain = list(c.execute(query).scalars())
        if not chain:
            raise NotFound(f"no adapter version '{adapter_id}'")
        return chain

    def descendants(self, adapter_ids: Iterable[str], conn: Connection | None = None) -> dict[str, int]:
        """Every descendant of ``adapter_ids`` (themselves included, at 0), with the fewest
        generations that separate it from one of them."""
        ids = sorted(set(adapter_ids))
        nearest: dict[str, int] = {}
        a = adapter_ancestry.c
        with reading(self.engine, conn) as c:
            for chunk in _chunks(ids):
                query = (select(a.descendant_id, func.min(a.depth)).where(a.ancestor_id.in_(chunk))
                         .group_by(a.descendant_id))
                for descendant, depth in c.execute(query):
                    nearest[descendant] = min(int(depth), nearest.get(descendant, int(depth)))
        return nearest

    def trained_on(self, manifest_ids: Iterable[str],
                   conn: Connection | None = None) -> dict[str, list[str]]:
        """Manifest id -> the versions trained on it (a manifest can serve several runs)."""
        ids = sorted(set(manifest_ids))
        by_manifest: dict[str, list[str]] = defaultdict(list)
        av = adapter_versions.c
        with reading(self.engine, conn) as c:
            for chunk in _chunks(ids):
                query = (select(av.manifest_id, av.adapter_id).where(av.manifest_id.in_(chunk))
                         .order_by(av.adapter_id))
                for manifest_id, adapter_id in c.execute(query):
                    by_manifest[manifest_id].append(adapter_id)
        return dict(by_manifest)

    def linked_to_contract(self, name: str, version: int) -> list[str]:
        """The versions trained on rewards judged by ``name@version``."""
        acv = adapter_contract_versions.c
        query = (select(acv.adapter_id)
                 .where(acv.contract_name == name, acv.contract_version == version)
                 .order_by(acv.adapter_id))
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def briefs(self, adapter_ids: Iterable[str],
               conn: Connection | None = None) -> dict[str, AdapterBrief]:
        """Id, specialist, version and effective status of the stored versions among ``adapter_ids``."""
        ids = sorted(set(adapter_ids))
        av, sc = adapter_versions.c, adapter_status_changes.c
        found: dict[str, AdapterBrief] = {}
        with reading(self.engine, conn) as c:
            for chunk in _chunks(ids):
                changes = select(sc.adapter_id, sc.status).where(sc.adapter_id.in_(chunk))
                latest = dict(c.execute(changes.order_by(sc.position)).all())  # the last one stays
                query = (select(av.adapter_id, av.specialist, av.version, av.status)
                         .where(av.adapter_id.in_(chunk)))
                for adapter_id, specialist, version, status in c.execute(query):
                    found[adapter_id] = AdapterBrief(adapter_id, specialist, version,
                                                     latest.get(adapter_id, status))
        return found

    def base_models(self, names: Iterable[str],
                    conn: Connection | None = None) -> dict[str, BaseModelEntry]:
        query = select(base_models).where(base_models.c.name.in_(sorted(set(names))))
        with reading(self.engine, conn) as c:
            return {row.name: base_from_row(row) for row in c.execute(query)}


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start:start + _CHUNK]
