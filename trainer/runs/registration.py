"""A run's final transaction: the version it produced, registered all at once or not at all."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from events.store import EventStore
from trainer.journal import lock_registry
from trainer.registry.aliases import move_in
from trainer.registry.model import PROMOTED, AdapterVersion, NewAdapter
from trainer.registry.registry import Registry, register_in
from trainer.runs.model import LeaseLost, TrainingRun
from trainer.runs.store import Runs


class Registration:
    def __init__(self, engine: Engine, store: EventStore, runs: Runs, registry: Registry) -> None:
        self.engine, self.store, self.runs, self.registry = engine, store, runs, registry

    def register(self, run: TrainingRun, worker: str, new: NewAdapter, reason: str) -> AdapterVersion:
        """All of it (version, contract links, run succeeded, events, the alias move of an
        auto-promotion) or, if ``worker`` lost the lease meanwhile, none (``LeaseLost``)."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            current = self.runs.reload_in(conn, run.run_id)
            if current.status != "running" or current.lease_owner != worker:
                raise LeaseLost(f"run {run.run_id} is {current.status} under {current.lease_owner}")
            adapter = register_in(conn, self.store, new, worker)
            self.runs.succeed_in(conn, run.run_id, worker, adapter.adapter_id, {
                "status": new.status, "artifact_sha256": new.artifact_sha256, "gate_reason": reason,
            })
            if new.status == PROMOTED:
                alias = str(run.gate.get("alias", "production"))
                move_in(conn, self.store, run.specialist, alias, adapter.adapter_id, worker,
                        f"auto-promoted by run {run.run_id}: {reason}")
        return self.registry.adapter(adapter.adapter_id)  # as committed, with contract hashes
