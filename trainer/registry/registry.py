"""The adapter registry: base models, specialists, adapter versions and their status.

Every change is an event (``base_model.*``, ``specialist.*``, ``adapter.*``) appended in
the same transaction as its append-only row. An adapter version is registered only by
a successful training run (``in_transaction.register_in``, inside the run's final transaction);
its status afterwards changes by new ``adapter_status_changes`` rows, the latest of which
is the effective status.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from events.store import EventStore
from kernel.clock import utc
from kernel.db import reading
from kernel.errors import Conflict, Invalid, NotFound
from kernel.json_input import JsonLimits, JsonRejected, check_json_value, parse_strict
from trainer.journal import base_model_stream, lock_registry, specialist_stream, write
from trainer.ml.digest import weights_sha256
from trainer.registry.aliases import latest_move, move_in
from trainer.registry.ancestry import adapters_in
from trainer.registry.events import BaseModelRegistered, SpecialistCreated
from trainer.registry.in_transaction import adapter_in
from trainer.registry.model import (
    CANDIDATE,
    PROMOTED,
    REJECTED,
    AdapterStatus,
    AdapterVersion,
    BaseModelEntry,
    Specialist,
)
from trainer.registry.projections import SPECIALIST_PROJECTIONS
from trainer.registry.rows import base_from_row
from trainer.registry.status import change_status_in as record_status_in
from trainer.registry.tables import (
    adapter_versions,
    base_models,
    specialists,
)


# The contract store's answer to "what is the content hash of NAME@VERSION": the
# registry links adapters to contract versions but does not read the contract tables.
class ContractHashes(Protocol):
    def __call__(self, refs: Iterable[tuple[str, int]],
                 conn: Connection | None = None) -> dict[tuple[str, int], str]: ...

NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,99}")


def _check_name(kind: str, name: str) -> None:
    if not NAME.fullmatch(name):
        raise Invalid(f"{kind} name '{name}' must match {NAME.pattern}")


class BaseModelPathRefused(Invalid):
    field = "path"


class Registry:
    def __init__(self, engine: Engine, store: EventStore, contract_hashes: ContractHashes,
                 models_root: Path | None = None) -> None:
        """``models_root``: the only directory base models are registered from (the server
        reads their weights and config); None allows any path (library use, tests)."""
        self.engine, self.store, self.contract_hashes = engine, store, contract_hashes
        self.models_root = models_root

    # --- base models -------------------------------------------------------------

    def register_base_model(self, name: str, path: str | Path, actor: str,
                            source: dict[str, Any] | None = None) -> BaseModelEntry:
        """Record a local model directory by its weight hash and (when known) its source,
        e.g. the package, version and file sha256 it was converted from; the same weights
        again are a no-op.

        Raises:
            BaseModelPathRefused: ``path`` resolves outside the models root.
            Invalid: no weight files or no config.json under ``path``.
            Conflict: ``name`` is taken by other weights.
        """
        _check_name("base model", name)
        root, digest, config = _read_model_dir(self._confined(path))
        with self.engine.begin() as conn:
            lock_registry(conn)
            existing = conn.execute(select(base_models).where(base_models.c.name == name)).first()
            if existing is not None:
                if existing.weights_sha256 != digest:
                    raise Conflict(f"base model '{name}' is registered with other weights "
                                   f"({existing.weights_sha256[:12]}…); choose another name")
                return base_from_row(existing)
            write(self.store, conn, SPECIALIST_PROJECTIONS, base_model_stream(name), BaseModelRegistered(
                name=name, path=str(root), weights_sha256=digest, config=config, source=source), actor)
        return self.base_model(name)

    def _confined(self, path: str | Path) -> Path:
        """``path`` resolved (symlinks followed; relative: under the models root), refused
        unless it lies inside the models root: a request must not make the server read,
        hash and echo back an arbitrary file."""
        try:
            if self.models_root is None:
                return Path(path).resolve()
            root = self.models_root.resolve()
            resolved = (root / path).resolve()  # an absolute ``path`` replaces ``root`` here
        except (OSError, ValueError) as exc:  # a NUL in the path, a symlink loop
            raise BaseModelPathRefused(f"'{path}' cannot be resolved: {exc}") from None
        if not resolved.is_relative_to(root):
            raise BaseModelPathRefused(f"'{path}' is outside the models directory {root} "
                                       "(HCP_MODELS_DIR); put the model there")
        return resolved

    def base_model(self, name: str) -> BaseModelEntry:
        with self.engine.connect() as conn:
            row = conn.execute(select(base_models).where(base_models.c.name == name)).first()
        if row is None:
            raise NotFound(f"no base model '{name}'")
        return base_from_row(row)

    def base_models(self) -> list[BaseModelEntry]:
        with self.engine.connect() as conn:
            return [base_from_row(r) for r in conn.execute(select(base_models).order_by(base_models.c.name))]

    # --- specialists -------------------------------------------------------------

    def create_specialist(self, name: str, description: str, actor: str) -> Specialist:
        _check_name("specialist", name)
        with self.engine.begin() as conn:
            lock_registry(conn)
            if conn.execute(select(specialists).where(specialists.c.name == name)).first():
                raise Conflict(f"specialist '{name}' exists")
            write(self.store, conn, SPECIALIST_PROJECTIONS, specialist_stream(name),
                  SpecialistCreated(name=name, description=description), actor, specialist=name)
        return self.specialist(name)

    def specialist(self, name: str) -> Specialist:
        with self.engine.connect() as conn:
            row = conn.execute(select(specialists).where(specialists.c.name == name)).first()
        if row is None:
            raise NotFound(f"no specialist '{name}'")
        return _specialist(row)

    def specialists(self) -> list[Specialist]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(specialists).order_by(specialists.c.created_at,
                                                             specialists.c.name))
            return [_specialist(r) for r in rows]

    # --- adapter versions --------------------------------------------------------

    def adapter(self, adapter_id: str) -> AdapterVersion:
        with self.engine.connect() as conn:
            found = adapter_in(conn, adapter_id)
        return self._with_hashes([found])[0]  # after closing: SQLite lets one connection in

    def adapters(self, specialist: str | None = None, limit: int = 100) -> list[AdapterVersion]:
        query = select(adapter_versions.c.adapter_id)
        if specialist is not None:
            query = query.where(adapter_versions.c.specialist == specialist)
        query = query.order_by(adapter_versions.c.specialist, adapter_versions.c.version.desc())
        with self.engine.connect() as conn:
            ids = list(conn.execute(query.limit(limit)).scalars())
            found = [adapter_in(conn, i) for i in ids]
        return self._with_hashes(found)

    def adapter_ids(self, specialist: str | None = None, limit: int = 1000,
                    before_version: int | None = None) -> list[str]:
        """Version ids, newest registration first, without reading the rows' JSON (for
        pickers, links and pages; ``before_version`` pages one specialist's list)."""
        av = adapter_versions.c
        query = select(av.adapter_id).order_by(av.event_position.desc()).limit(limit)
        if specialist is not None:
            query = query.where(av.specialist == specialist)
        if before_version is not None:
            query = query.where(av.version < before_version)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def adapter_ids_of_artifact(self, sha256: str) -> list[str]:
        """The versions registered with artifact ``sha256``, oldest first (the same bytes
        may be registered twice, e.g. for two specialists)."""
        av = adapter_versions.c
        query = select(av.adapter_id).where(av.artifact_sha256 == sha256).order_by(av.event_position)
        with self.engine.connect() as conn:
            return list(conn.execute(query).scalars())

    def versions(self, adapter_ids: Iterable[str],
                 conn: Connection | None = None) -> dict[str, AdapterVersion]:
        """The stored versions among ``adapter_ids``, by id, in a few batched queries."""
        with reading(self.engine, conn) as c:
            found = self._with_hashes(adapters_in(c, adapter_ids), c)
        return {a.adapter_id: a for a in found}

    def _with_hashes(self, adapters: list[AdapterVersion],
                     conn: Connection | None = None) -> list[AdapterVersion]:
        hashes = self.contract_hashes({(c.name, c.version) for a in adapters
                                       for c in a.contract_versions}, conn)
        return [replace(a, contract_versions=[
            replace(c, content_hash=hashes.get((c.name, c.version))) for c in a.contract_versions])
            for a in adapters]

    def set_status(self, adapter_id: str, status: AdapterStatus, actor: str, reason: str,
                   alias: str | None = None) -> AdapterVersion:
        """Promote (optionally moving ``alias`` to it) or reject; always a manual decision."""
        if status not in (PROMOTED, REJECTED, CANDIDATE):
            raise Invalid(f"status must be {PROMOTED}, {REJECTED} or {CANDIDATE}")
        with self.engine.begin() as conn:
            lock_registry(conn)
            adapter = adapter_in(conn, adapter_id)
            changed = adapter.status != status
            if changed:
                change_status_in(conn, self.store, adapter, status, actor, reason)
            if alias is not None and status == PROMOTED:
                current = latest_move(conn, adapter.specialist, alias)
                if current is None or current.adapter_id != adapter_id:
                    move_in(conn, self.store, adapter.specialist, alias, adapter_id, actor,
                            reason or f"promote {adapter_id}")
                    changed = True
            if not changed:
                raise Conflict(f"{adapter_id} is already {status}")
        return self.adapter(adapter_id)


def change_status_in(conn: Connection, store: EventStore, adapter: AdapterVersion, status: str,
                     actor: str, reason: str) -> None:
    record_status_in(conn, store, adapter.adapter_id, adapter.specialist, status, adapter.status,
                     actor, reason)


def _read_model_dir(path: str | Path) -> tuple[Path, str, dict[str, Any]]:
    """The directory, its weight digest and its config.json (an object, storable as read).

    Raises:
        Invalid (field ``path``): not a readable model directory, or a config.json that is
        not UTF-8 JSON of an object the log can store exactly (see ``kernel.json_input``).
    """
    try:
        root = Path(path).resolve()
        digest = weights_sha256(root)
        config = parse_strict((root / "config.json").read_bytes())
        check_json_value(config, JsonLimits(), "config.json")
        if not isinstance(config, dict):
            raise JsonRejected("config.json", "is not a JSON object")
    except (OSError, ValueError) as exc:  # missing, unreadable, NUL in the path, bad JSON
        invalid = Invalid(f"{path} is not a model directory: {exc}")
        invalid.field = "path"
        raise invalid from None
    return root, digest, config


def _specialist(row: Any) -> Specialist:
    return Specialist(name=row.name, description=row.description, created_by=row.created_by,
                      created_at=utc(row.created_at))
