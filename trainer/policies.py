"""Where a specialist's trigger policy comes from, in order of precedence:

1. the latest configuration set through the API (``trigger_policies``, append-only, each
   one a ``trigger.configured`` event);
2. the ``[training.triggers.<specialist>]`` table of a published contract: the latest
   published version of each contract, by contract name, the first that has one; its
   rewards are then the only ones the specialist's datasets use;
3. none: the specialist trains only when triggered by hand (with the default gate).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from contract.document import ContractDocument, ContractInvalid, parse_contract
from contract.tables import contract_versions as cv
from events.store import EventStore
from trainer.model import NotFound
from trainer.policy import DISABLED, TriggerPolicy, policy_from_contract
from trainer.tables import specialists, trigger_policies
from trainer.writes import lock_registry, record, specialist_stream


@dataclass(frozen=True)
class EffectivePolicy:
    specialist: str
    policy: TriggerPolicy
    source: str  # "api" | "contract:<name>@<version>" | "none"

    def to_json(self) -> dict[str, Any]:
        return {"specialist": self.specialist, "source": self.source,
                "policy": self.policy.model_dump()}


class Policies:
    def __init__(self, engine: Engine, store: EventStore) -> None:
        self.engine, self.store = engine, store

    def configure(self, specialist: str, policy: TriggerPolicy, actor: str) -> EffectivePolicy:
        config = policy.model_dump()
        with self.engine.begin() as conn:
            lock_registry(conn)
            _require(conn, specialist)
            event = record(self.store, conn, specialist_stream(specialist), "trigger.configured",
                           {"specialist": specialist, "policy": config}, actor,
                           specialist=specialist)
            conn.execute(trigger_policies.insert().values(
                position=event.position, specialist=specialist, config=config, actor=actor,
                configured_at=event.recorded_at))
        return self.effective(specialist)

    def effective(self, specialist: str) -> EffectivePolicy:
        with self.engine.connect() as conn:
            return effective_in(conn, specialist)


def effective_in(conn: Connection, specialist: str) -> EffectivePolicy:
    _require(conn, specialist)
    configured = conn.execute(
        select(trigger_policies.c.config).where(trigger_policies.c.specialist == specialist)
        .order_by(trigger_policies.c.position.desc()).limit(1)).scalar()
    if configured is not None:
        return EffectivePolicy(specialist, TriggerPolicy.model_validate(configured), "api")
    for name, version, content_hash, document in _latest_published(conn):
        parsed = _parsed(name, version, content_hash, document)
        policy = policy_from_contract(parsed, specialist, name) if parsed else None
        if policy is not None:
            return EffectivePolicy(specialist, policy, f"contract:{name}@{version}")
    return EffectivePolicy(specialist, DISABLED, "none")


def _latest_published(conn: Connection) -> list[tuple[str, int, str, str]]:
    rows = conn.execute(select(cv.c.name, cv.c.version, cv.c.content_hash, cv.c.document)
                        .where(cv.c.status == "published").order_by(cv.c.name, cv.c.version))
    latest = {row.name: (row.name, row.version, row.content_hash, row.document) for row in rows}
    return [latest[n] for n in sorted(latest)]


@lru_cache(maxsize=64)
def _parsed(name: str, version: int, content_hash: str, document: str) -> ContractDocument | None:
    # A published version never changes, so its parse can be kept (keyed by its hash too).
    try:
        return parse_contract(document)
    except ContractInvalid:
        return None


def _require(conn: Connection, name: str) -> None:
    if conn.execute(select(specialists.c.name).where(specialists.c.name == name)).first() is None:
        raise NotFound(f"no specialist '{name}'")
