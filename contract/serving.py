"""The serving version: which published contract version a harness runs, per specialist.

Publishing makes a version *score* (every published version judges new subjects, so a
successor can be compared with its parent on the same traffic); it does not make it
*serve*. Each (contract name, specialist) has one serving version, moved only by a
``contract.serving_moved`` event on stream ``contract:<name>`` with a row in
``contract_serving_moves`` written in the same transaction. The first published
version that declares a specialist starts serving it; later ones serve only when moved.
Retiring the serving version of a specialist that no other published version declares
stops serving it (a move to no version); with another one there, serving must be moved
to it first, so a harness is never left without its configuration by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.engine import Connection, Engine

from contract.as_of import active_in
from contract.document import parse_contract
from contract.events import ServingMoved
from contract.harness_config import config_hash, harness_config
from contract.projections import CONTRACT_PROJECTIONS
from contract.tables import contract_serving_moves as moves
from contract.tables import contract_versions as cv
from events.cut import cut_at
from events.model import EventMetadata
from events.projections.sql import write_in
from events.store import EventStore
from kernel.clock import utc
from kernel.db import reading
from kernel.errors import Conflict, Invalid, NotFound
from kernel.sql import lock_writers
from kernel.values import JsonValue

SERVING_LOCK_KEY = 0x48435053525645  # "HCPSRVE": serialises moves, so `previous` is right
PUBLISHED = "published"


@dataclass(frozen=True)
class ServingMove(JsonValue):
    position: int
    name: str
    specialist: str
    version: int | None  # None: nothing serves the specialist from this move on
    previous_version: int | None
    actor: str
    reason: str
    moved_at: datetime

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class ServingState:
    serving: dict[str, ServingMove]  # specialist -> the move that made its version serve
    scoring: list[int]  # the published, not retired, versions: each scores new subjects


def _move(row: Any) -> ServingMove:
    return ServingMove(row.position, row.name, row.specialist, row.version, row.previous_version,
                       row.actor, row.reason, utc(row.moved_at))


def lock_serving(conn: Connection) -> None:
    """Serialise serving moves; taken before the log's lock (by appending), like every
    lock that guards a read-then-write, so the two never deadlock."""
    lock_writers(conn, SERVING_LOCK_KEY)


def latest_in(conn: Connection, name: str, specialist: str,
              upto: int | None = None) -> ServingMove | None:
    """The move in force at log position ``upto`` (now when None; events/cut.py)."""
    query = select(moves).where(moves.c.name == name, moves.c.specialist == specialist)
    if upto is not None:
        query = query.where(moves.c.position <= upto)
    row = conn.execute(query.order_by(moves.c.position.desc()).limit(1)).first()
    return _move(row) if row else None


def move_in(conn: Connection, store: EventStore, name: str, specialist: str, version: int | None,
            actor: str, reason: str, specialists: frozenset[str]) -> ServingMove:
    """Serve ``name@version`` (None: nothing) to ``specialist`` inside the caller's transaction.

    ``specialists``: those the version's harness declares (a version serves only slots
    it configures). Raises Conflict when it already serves, Invalid for an undeclared slot.
    """
    if version is not None and specialist not in specialists:
        raise Invalid(f"{name}@{version} does not declare specialist '{specialist}' "
                      f"(it declares {', '.join(sorted(specialists))})")
    lock_serving(conn)
    current = latest_in(conn, name, specialist)
    if current is not None and current.version == version:
        raise Conflict(f"{name}@{version} already serves '{specialist}'")
    previous = current.version if current else None
    done = write_in(conn, store, CONTRACT_PROJECTIONS, f"contract:{name}", ServingMoved(
        name=name, version=version, specialist=specialist, previous_version=previous, reason=reason),
        EventMetadata(actor=actor, specialist=specialist, contract=f"{name}@{version or previous}",
                      occurred_at=datetime.now(UTC)))
    return ServingMove(done.position, name, specialist, version, previous, actor, reason, done.recorded_at)


def serve_unserved_in(conn: Connection, store: EventStore, name: str, version: int,
                      specialists: frozenset[str], actor: str) -> list[ServingMove]:
    """On publish: the version starts serving each declared slot that nothing serves yet."""
    served = set(conn.execute(select(moves.c.specialist).where(moves.c.name == name)).scalars())
    return [move_in(conn, store, name, specialist, version, actor,
                    "first published version declaring this specialist", specialists)
            for specialist in sorted(specialists - served)]


def stop_serving_in(conn: Connection, store: EventStore, name: str, version: int, actor: str,
                    alternatives: dict[int, frozenset[str]]) -> list[ServingMove]:
    """On retiring ``name@version``: nothing serves the specialists it served, unless
    another published version (``alternatives``: version -> declared slots) declares one;
    then Conflict, naming where to move serving first."""
    lock_serving(conn)
    served = serving_specialists_in(conn, name, version)
    blocked = {s: [v for v, slots in sorted(alternatives.items()) if s in slots] for s in served}
    blocked = {s: vs for s, vs in blocked.items() if vs}
    if blocked:
        where = "; ".join(f"{s}: {', '.join(f'{name}@{v}' for v in vs)}" for s, vs in blocked.items())
        raise Conflict(f"{name}@{version} serves {', '.join(blocked)}: move serving to another "
                       f"published version first ({where}) with hcp contract serve")
    return [move_in(conn, store, name, s, None, actor, f"{name}@{version} retired; no other "
                    "published version declares this specialist", frozenset()) for s in served]


def serving_specialists_in(conn: Connection, name: str, version: int) -> list[str]:
    """The specialists ``name@version`` serves now."""
    latest = (select(moves.c.specialist, func.max(moves.c.position).label("p"))
              .where(moves.c.name == name).group_by(moves.c.specialist).subquery())
    query = select(moves.c.specialist).join(latest, moves.c.position == latest.c.p) \
        .where(moves.c.version == version)
    return sorted(conn.execute(query).scalars())


def declared_specialists(document: str) -> frozenset[str]:
    return frozenset(parse_contract(document).harness.specialists)


# The registry's answer to "where does this specialist's alias point (at T)": the
# contract layer names aliases but does not read the registry.
AdapterOf = Callable[[str, str, datetime | None], str | None]


class ContractServing:
    """Move serving versions (each move an event) and read them, now or at a time."""

    def __init__(self, engine: Engine, store: EventStore,
                 adapter_of: AdapterOf = lambda _s, _a, _t: None) -> None:
        self.engine, self.store, self.adapter_of = engine, store, adapter_of

    def harness(self, name: str, specialist: str,
                at: datetime | None = None) -> dict[str, Any]:
        """The serving version's harness configuration for ``specialist``, with the
        adapter its alias points to and ``config_hash`` (the ETag) over all of it."""
        move = self.at(name, specialist, at)
        with self.engine.connect() as conn:
            row = conn.execute(select(cv).where(cv.c.name == name,
                                                cv.c.version == move.version)).one()
        body = harness_config(parse_contract(row.document), row.version, row.content_hash,
                              specialist)
        alias = body["adapter_alias"]
        body["adapter"] = {"alias": alias, "adapter_id": self.adapter_of(specialist, alias, at)}
        return {**body, "config_hash": config_hash(body)}

    def move(self, name: str, specialist: str | None, version: int, actor: str,
             reason: str) -> list[ServingMove]:
        """Serve ``name@version`` to ``specialist`` (None: every slot it declares)."""
        with self.engine.begin() as conn:
            lock_serving(conn)
            row = conn.execute(select(cv).where(cv.c.name == name, cv.c.version == version)).first()
            if row is None:
                raise NotFound(f"contract {name}@{version} does not exist")
            if row.status != PUBLISHED:
                raise Conflict(f"{name}@{version} is {row.status}: only a published version serves")
            slots = declared_specialists(row.document)
            wanted = [specialist] if specialist else [
                s for s in sorted(slots) if _version(latest_in(conn, name, s)) != version]
            if not wanted:
                raise Conflict(f"{name}@{version} already serves every specialist it declares")
            return [move_in(conn, self.store, name, s, version, actor, reason, slots) for s in wanted]

    def at(self, name: str, specialist: str, at: datetime | None = None) -> ServingMove:
        """The serving move in force now (or at ``at``). Raises NotFound when none was."""
        with self.engine.connect() as conn:
            found = latest_in(conn, name, specialist, cut_at(conn, at))
        if found is None or found.version is None:
            when = f"at {utc(at).isoformat()}" if at else "now"
            raise NotFound(f"no version of contract '{name}' served '{specialist}' {when}")
        return found

    def current(self, name: str, at: datetime | None = None) -> dict[str, ServingMove]:
        """Every specialist of the contract that a version serves (at ``at``)."""
        with self.engine.connect() as conn:
            return _served_in(conn, name, cut_at(conn, at))

    def state(self, name: str, at: datetime | None = None) -> ServingState:
        """What serves each specialist and which versions score, now or at ``at``: both
        read up to one cut of the log (events/cut.py), so they describe one moment."""
        with self.engine.connect() as conn:
            upto = cut_at(conn, at)
            return ServingState(_served_in(conn, name, upto),
                                [int(r.version) for r in active_in(conn, upto, name)])

    def history(self, name: str, specialist: str | None = None,
                limit: int = 100) -> list[ServingMove]:
        """Moves newest first."""
        query = select(moves).where(moves.c.name == name)
        if specialist is not None:
            query = query.where(moves.c.specialist == specialist)
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(moves.c.position.desc()).limit(limit))
            return [_move(r) for r in rows]

    def stored_rows(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Every move (of contracts ``names``) exactly as stored: what an auditor compares
        with the ``contract.serving_moved`` events. One query."""
        query = select(moves).order_by(moves.c.position)
        if names is not None:
            query = query.where(moves.c.name.in_(sorted(set(names))))
        with self.engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def version_for(self, name: str, specialist: str,
                    conn: Connection | None = None) -> int | None:
        """The serving version number, or None (the trainer's port; ``conn``: the
        caller's open transaction)."""
        with reading(self.engine, conn) as c:
            found = latest_in(c, name, specialist)
        return found.version if found else None


def _served_in(conn: Connection, name: str, upto: int | None) -> dict[str, ServingMove]:
    specialists = sorted(set(conn.execute(select(moves.c.specialist).where(moves.c.name == name)).scalars()))
    found = {s: latest_in(conn, name, s, upto) for s in specialists}
    return {s: m for s, m in found.items() if m is not None and m.version is not None}


def _version(move: ServingMove | None) -> int | None:
    return move.version if move else None
