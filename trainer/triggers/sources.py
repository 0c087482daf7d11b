"""Where a specialist's trigger policy comes from, in order of precedence:

1. the latest configuration set through the API (``trigger_policies``, append-only, each
   one a ``trigger.configured`` event), unless the latest row drops it (a
   ``trigger.cleared`` event; its config is JSON null): then the contract's is in force;
2. the ``[training.triggers.<specialist>]`` table of a published contract: the latest
   published version of each contract, by contract name, the first that has one; its
   rewards are then the only ones the specialist's datasets use;
3. none: the specialist trains only when triggered by hand (with the default gate).

Both sources hold the same document (``contract.policy.TriggerPolicy``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Engine

from contract.document import ContractDocument, ContractInvalid, parse_contract
from contract.policy import TriggerPolicy
from contract.versions import ContractVersion, ContractVersions
from events.store import EventStore
from kernel.errors import Conflict
from trainer.journal import lock_registry, specialist_stream, write
from trainer.registry.in_transaction import require_specialist_in
from trainer.triggers.events import TriggerCleared, TriggerConfigured
from trainer.triggers.policy import NO_POLICY, Policy, policy_from_contract, resolve
from trainer.triggers.projections import TRIGGER_PROJECTIONS
from trainer.triggers.tables import trigger_policies


class Policies:
    def __init__(self, engine: Engine, store: EventStore, contracts: ContractVersions) -> None:
        self.engine, self.store, self.contracts = engine, store, contracts

    def configure(self, specialist: str, rule: TriggerPolicy, actor: str) -> Policy:
        """Set the specialist's policy through the API (it overrides the contract's)."""
        config = rule.model_dump(mode="json")
        with self.engine.begin() as conn:
            lock_registry(conn)
            require_specialist_in(conn, specialist)
            write(self.store, conn, TRIGGER_PROJECTIONS, specialist_stream(specialist),
                  TriggerConfigured(specialist=specialist, policy=config), actor, specialist=specialist)
        return self.effective(specialist)

    def clear(self, specialist: str, actor: str, reason: str = "") -> Policy:
        """Drop the API-set policy: the contract's (or none) is in force again.

        Raises:
            Conflict: no API-set policy is in force.
        """
        with self.engine.begin() as conn:
            lock_registry(conn)
            require_specialist_in(conn, specialist)
            if _latest_config(conn, specialist) is None:
                raise Conflict(f"'{specialist}' has no API-set trigger policy to drop")
            write(self.store, conn, TRIGGER_PROJECTIONS, specialist_stream(specialist),
                  TriggerCleared(specialist=specialist, reason=reason), actor, specialist=specialist)
        return self.effective(specialist)

    def effective(self, specialist: str) -> Policy:
        with self.engine.connect() as conn:
            return self.effective_in(conn, specialist)

    def effective_in(self, conn: Connection, specialist: str) -> Policy:
        """The policy in force for ``specialist`` (read inside ``conn``'s transaction)."""
        require_specialist_in(conn, specialist)
        configured, author = _latest_row(conn, specialist)
        if configured is not None:
            return replace(resolve(stored_rule(configured), "api"), author=author)
        return _from_contracts(self.contracts.latest_published_each(conn), specialist)

    def effective_if_published(self, specialist: str, draft: ContractVersion) -> Policy:
        """The policy that would be in force for ``specialist`` were ``draft`` published
        (what `hcp contract publish` says before it publishes)."""
        with self.engine.connect() as conn:
            require_specialist_in(conn, specialist)
            configured, author = _latest_row(conn, specialist)
            if configured is not None:
                return replace(resolve(stored_rule(configured), "api"), author=author)
            latest = [v for v in self.contracts.latest_published_each(conn) if v.name != draft.name]
        return _from_contracts(sorted([*latest, draft], key=lambda v: v.name), specialist)


def _from_contracts(latest_each: list[ContractVersion], specialist: str) -> Policy:
    """Of the latest published version of each contract, by name, the first one's policy."""
    for version in latest_each:
        parsed = _parsed(version.name, version.version, version.content_hash, version.document)
        policy = policy_from_contract(parsed, specialist, version.ref) if parsed else None
        if policy is not None:
            return replace(policy, author=version.published_by or version.created_by)
    return NO_POLICY


def _latest_config(conn: Connection, specialist: str) -> dict[str, Any] | None:
    """The API-set policy in force (None: never set, or dropped by the latest row)."""
    return _latest_row(conn, specialist)[0]


def _latest_row(conn: Connection, specialist: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the API-set policy in force, who set it); (None, None) when none is."""
    row = conn.execute(
        select(trigger_policies.c.config, trigger_policies.c.actor)
        .where(trigger_policies.c.specialist == specialist)
        .order_by(trigger_policies.c.position.desc()).limit(1)).first()
    if row is None or not isinstance(row.config, dict):
        return None, None
    return row.config, row.actor


def stored_rule(config: dict[str, Any]) -> TriggerPolicy:
    """A stored configuration as the policy document.

    Rows written before the trainer and the contract shared one schema hold the trainer's
    own form (``reward_floor`` a number beside ``reward_window``, a nested ``gate``); the
    table is append-only, so they are converted here, on read.
    """
    if "gate" not in config and not isinstance(config.get("reward_floor"), int | float):
        return TriggerPolicy.model_validate(config)
    old = dict(config)
    gate = old.pop("gate", None) or {}
    window = old.pop("reward_window", 50)
    floor = old.pop("reward_floor", None)
    converted = {**old, "reward_floor": None if floor is None else {"threshold": floor, "window": window},
                 "gate_margin": gate.get("margin", 0.0),
                 "regression_tolerance": gate.get("regression_tolerance", {}),
                 "auto_promote": gate.get("auto_promote", False), "alias": gate.get("alias"),
                 "gate_metric": gate.get("metric", "offline"),
                 "rollout_harness": gate.get("rollout_harness", "text"),
                 "rollout_max_new_tokens": gate.get("rollout_max_new_tokens", 24),
                 "rollout_prompts": gate.get("rollout_prompts", 32)}
    return TriggerPolicy.model_validate(converted)


@lru_cache(maxsize=64)
def _parsed(name: str, version: int, content_hash: str, document: str) -> ContractDocument | None:
    # A published version never changes, so its parse can be kept (keyed by its hash too).
    try:
        return parse_contract(document)
    except ContractInvalid:
        return None
