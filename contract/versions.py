"""Contract versions: drafts, edits, publishing and retiring, each an event in the log.

The rows in ``contract_versions`` are a projection; the event on stream
``contract:<name>`` is written in the same transaction, so the log always holds who
changed what and when, and the projection can be rebuilt from it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from contract.as_of import active_in
from contract.document import ContractDocument, content_hash, parse_contract
from contract.events import DraftCreated, DraftEdited, Published, Retired
from contract.projections import CONTRACT_PROJECTIONS
from contract.serving import lock_serving, serve_unserved_in, stop_serving_in
from contract.tables import contract_versions as cv
from events.cut import cut_at
from events.model import EventMetadata, RecordedEvent
from events.projections.sql import write_in
from events.store import EventStore
from kernel.db import reading
from kernel.errors import Conflict, NotFound

DRAFT, PUBLISHED, RETIRED = "draft", "published", "retired"


class VersionNotFound(NotFound):
    pass


class VersionConflict(Conflict):
    """The requested change is not allowed in the version's state (HTTP 409)."""


@dataclass(frozen=True)
class ContractVersion:
    name: str
    version: int
    parent_version: int | None
    status: str
    document: str
    content_hash: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    published_at: datetime | None
    published_by: str | None
    retired_at: datetime | None

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def parsed(self) -> ContractDocument:
        return parse_contract(self.document)

    def summary(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "document"}


def contract_stream(name: str) -> str:
    return f"contract:{name}"


class ContractVersions:
    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def create_draft(self, name: str, document: str, actor: str,
                     parent_version: int | None = None) -> ContractVersion:
        """A new draft (version max+1); ``document`` may be omitted-by-copy via the parent."""
        parsed = parse_contract(document)  # raises ContractInvalid listing every problem
        if parsed.contract.name != name:
            raise VersionConflict(f"document [contract].name is '{parsed.contract.name}', "
                                  f"not '{name}'")
        for _attempt in range(5):
            try:
                with self.engine.begin() as conn:
                    if parent_version is not None:
                        self._row(conn, name, parent_version)
                    version = self._next_version(conn, name)
                    self._write(conn, actor, DraftCreated(
                        name=name, version=version, parent_version=parent_version,
                        content_hash=content_hash(parsed), document=document))
                return self.get(name, version)
            except IntegrityError:
                continue  # another writer took max+1 first; take the next number
        raise VersionConflict(f"could not allocate a version of '{name}' (too much contention)")

    def draft_from(self, name: str, parent_version: int, actor: str) -> ContractVersion:
        """Start editing ``parent_version``: a new draft with the same document."""
        return self.create_draft(name, self.get(name, parent_version).document, actor, parent_version)

    def edit_draft(self, name: str, version: int, document: str, actor: str) -> ContractVersion:
        parsed = parse_contract(document)
        with self.engine.begin() as conn:
            row = self._row(conn, name, version)
            if row.status != DRAFT:
                raise VersionConflict(
                    f"{name}@{version} is {row.status} and immutable; start a new draft from it "
                    f"(POST /v1/contracts/{name}/versions with parent_version={version})")
            self._write(conn, actor, DraftEdited(name=name, version=version,
                                                 content_hash=content_hash(parsed), document=document))
        return self.get(name, version)

    def publish(self, name: str, version: int, actor: str, check: dict[str, Any] | None = None,
                forced: str | None = None) -> ContractVersion:
        """Freeze a draft and make it score; the evaluators re-score history under it.

        It serves the specialists it declares that no version serves yet (the first
        version of a contract serves all of them); others keep their serving version.
        ``check`` (the publish check's figures) and ``forced`` (why a failed check was
        overridden) are recorded in the ``contract.published`` event.
        """
        with self.engine.begin() as conn:
            lock_serving(conn)
            row = self._row(conn, name, version)
            if row.status != DRAFT:
                raise VersionConflict(f"{name}@{version} is already {row.status}")
            self._write(conn, actor, Published(name=name, version=version, content_hash=row.content_hash,
                                               check=check or None, forced=forced or None))
            slots = frozenset(parse_contract(row.document).harness.specialists)
            serve_unserved_in(conn, self.store, name, version, slots, actor)
        return self.get(name, version)

    def retire(self, name: str, version: int, actor: str, reason: str = "") -> ContractVersion:
        """Stop scoring under a published version. The specialists it serves stop being
        served, unless another published version declares one: then serving must be
        moved there first (VersionConflict)."""
        with self.engine.begin() as conn:
            lock_serving(conn)  # before the log's lock, as every serving writer takes them
            row = self._row(conn, name, version)
            if row.status != PUBLISHED:
                raise VersionConflict(f"only a published version can be retired; {name}@{version} "
                                      f"is {row.status}")
            self._write(conn, actor, Retired(name=name, version=version, content_hash=row.content_hash,
                                             reason=reason))
            others = {r.version: frozenset(parse_contract(r.document).harness.specialists)
                      for r in conn.execute(select(cv).where(cv.c.name == name,
                                                             cv.c.status == PUBLISHED))}
            try:
                stop_serving_in(conn, self.store, name, version, actor, others)
            except Conflict as exc:  # the whole retirement rolls back with it
                raise VersionConflict(str(exc)) from None
        return self.get(name, version)

    def get(self, name: str, version: int) -> ContractVersion:
        with self.engine.connect() as conn:
            return _entity(self._row(conn, name, version))

    def versions(self, name: str | None = None, status: str | None = None) -> list[ContractVersion]:
        query = select(cv).order_by(cv.c.name, cv.c.version)
        if name:
            query = query.where(cv.c.name == name)
        if status:
            query = query.where(cv.c.status == status)
        with self.engine.connect() as conn:
            return [_entity(r) for r in conn.execute(query)]

    def active(self) -> list[ContractVersion]:
        """Every published (not retired) version: each one scores every new subject."""
        return self.versions(status=PUBLISHED)

    def active_at(self, at: datetime | None, name: str | None = None) -> list[ContractVersion]:
        """The versions (of ``name``) that scored at ``at`` (None: now): published by the
        log's last event recorded at or before it, and not retired by then."""
        with self.engine.connect() as conn:
            return [_entity(r) for r in active_in(conn, cut_at(conn, at), name)]

    def latest_published(self, name: str) -> ContractVersion:
        published = [v for v in self.versions(name) if v.status == PUBLISHED]
        if not published:
            raise VersionNotFound(f"contract '{name}' has no published version")
        return published[-1]

    def latest_published_each(self, conn: Connection | None = None) -> list[ContractVersion]:
        """The latest published version of every contract name, by name (``conn``: the
        caller's open transaction)."""
        query = select(cv).where(cv.c.status == PUBLISHED).order_by(cv.c.name, cv.c.version)
        latest: dict[str, ContractVersion] = {}
        with reading(self.engine, conn) as c:
            for row in c.execute(query):
                latest[row.name] = _entity(row)  # ordered by version: the last one stays
        return [latest[name] for name in sorted(latest)]

    def content_hashes(self, refs: Iterable[tuple[str, int]],
                       conn: Connection | None = None) -> dict[tuple[str, int], str]:
        """The content hash of each (name, version) that exists (``conn``: one to share)."""
        wanted = set(refs)
        if not wanted:
            return {}
        names = {name for name, _ in wanted}
        query = select(cv.c.name, cv.c.version, cv.c.content_hash).where(cv.c.name.in_(names))
        with reading(self.engine, conn) as c:
            rows = c.execute(query).all()
        return {(r.name, r.version): r.content_hash for r in rows if (r.name, r.version) in wanted}

    def stored_rows(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Every version (of ``names``) exactly as stored, ``last_event_position`` included:
        what an auditor compares with the ``contract.*`` events. One query."""
        query = select(cv).order_by(cv.c.name, cv.c.version)
        if names is not None:
            query = query.where(cv.c.name.in_(sorted(set(names))))
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def history(self, name: str) -> list[RecordedEvent]:
        return self.store.read_stream(contract_stream(name), limit=100_000)

    def _next_version(self, conn: Connection, name: str) -> int:
        current = conn.execute(select(func.max(cv.c.version)).where(cv.c.name == name)).scalar()
        return int(current or 0) + 1

    def _row(self, conn: Connection, name: str, version: int) -> Any:
        row = conn.execute(select(cv).where(cv.c.name == name, cv.c.version == version)).first()
        if row is None:
            raise VersionNotFound(f"contract {name}@{version} does not exist")
        return row

    def _write(self, conn: Connection, actor: str, event: DraftCreated | DraftEdited | Published | Retired,
               ) -> None:
        write_in(conn, self.store, CONTRACT_PROJECTIONS, contract_stream(event.name), event,
                 EventMetadata(actor=actor, contract=f"{event.name}@{event.version}",
                               occurred_at=datetime.now(UTC)))


def _entity(row: Any) -> ContractVersion:
    fields: Callable[[str], Any] = row._mapping.__getitem__
    return ContractVersion(**{k: fields(k) for k in ContractVersion.__dataclass_fields__})
