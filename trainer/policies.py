"""Where a specialist's trigger policy comes from, in order of precedence:

1. the latest configuration set through the API (``trigger_policies``, append-only, each
   one a ``trigger.configured`` event);
2. the ``[training]`` table of a published contract: the latest published version of
   each contract, by contract name, the first that has one (``[training.<specialist>]``
   overrides the shared keys); its rewards are then the only ones used;
3. the defaults of ``TriggerPolicy``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from contract.tables import contract_versions as cv
from events.store import EventStore
from trainer.model import Invalid, NotFound
from trainer.policy import TriggerPolicy, policy_from_training_section
from trainer.tables import specialists, trigger_policies
from trainer.writes import lock_registry, record, specialist_stream


@dataclass(frozen=True)
class EffectivePolicy:
    specialist: str
    policy: TriggerPolicy
    source: str  # "api" | "contract:<name>@<version>" | "default"

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
    for name, version, document in _latest_published(conn):
        section = _training_section(document)
        if section:
            try:
                policy = policy_from_training_section(section, specialist, contract=name)
            except ValidationError as exc:
                raise Invalid(f"[training] of contract {name}@{version}: {exc}") from None
            return EffectivePolicy(specialist, policy, f"contract:{name}@{version}")
    return EffectivePolicy(specialist, TriggerPolicy(), "default")


def _latest_published(conn: Connection) -> list[tuple[str, int, str]]:
    rows = conn.execute(select(cv.c.name, cv.c.version, cv.c.document)
                        .where(cv.c.status == "published").order_by(cv.c.name, cv.c.version))
    latest: dict[str, tuple[str, int, str]] = {}
    for name, version, document in rows:
        latest[name] = (name, version, document)
    return [latest[n] for n in sorted(latest)]


def _training_section(document: str) -> dict[str, Any]:
    # Read the raw TOML table: the trainer needs only [training], and a published
    # document was validated by the contract package when it was written.
    try:
        section = tomllib.loads(document).get("training")
    except tomllib.TOMLDecodeError:
        return {}
    return section if isinstance(section, dict) else {}


def _require(conn: Connection, name: str) -> None:
    if conn.execute(select(specialists.c.name).where(specialists.c.name == name)).first() is None:
        raise NotFound(f"no specialist '{name}'")
