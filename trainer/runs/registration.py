"""A run's final transaction: the version it produced, registered all at once or not at all."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.engine import Connection, Engine

from events.server_events import logged
from events.store import EventStore
from trainer.journal import lock_registry, run_stream
from trainer.registry.aliases import is_protected_in, move_in
from trainer.registry.approvals import request_in
from trainer.registry.in_transaction import artifact_versions_in, register_in
from trainer.registry.model import CANDIDATE, PROMOTED, AdapterVersion, NewAdapter
from trainer.registry.registry import Registry
from trainer.runs.duplicates import DuplicateArtifact
from trainer.runs.events import TrainingQueued
from trainer.runs.model import LeaseLost, TrainingRun
from trainer.runs.selection import Selection
from trainer.runs.store import Runs


class Registration:
    def __init__(self, engine: Engine, store: EventStore, runs: Runs, registry: Registry) -> None:
        self.engine, self.store, self.runs, self.registry = engine, store, runs, registry

    def register(self, run: TrainingRun, worker: str, new: NewAdapter, reason: str,
                 selection: Selection | None = None) -> AdapterVersion:
        """All of it (version, contract links, run succeeded, events, the alias move of an
        auto-promotion) or, if ``worker`` lost the lease meanwhile, none (``LeaseLost``)."""
        with self.engine.begin() as conn:
            lock_registry(conn)
            current = self.runs.reload_in(conn, run.run_id)
            if current.status != "running" or current.lease_owner != worker:
                raise LeaseLost(f"run {run.run_id} is {current.status} under {current.lease_owner}")
            # The runner refused a duplicate before its gate; a run that registered the
            # same weights meanwhile is caught here, under the lock.
            twins = artifact_versions_in(conn, run.specialist, new.artifact_sha256)
            if twins:
                raise DuplicateArtifact(f"the trained weights are byte-identical to {twins[0]} "
                                        f"(artifact {new.artifact_sha256[:12]}…), registered while "
                                        "this run trained; not registered again")
            alias = str(run.gate.get("alias", "production"))
            # A protected alias is not moved by the gate: the version waits as a candidate
            # with a move request that a person approves.
            held = new.status == PROMOTED and is_protected_in(conn, run.specialist, alias)
            new = replace(new, status=CANDIDATE) if held else new
            adapter = register_in(conn, self.store, new, worker)
            self.runs.succeed_in(conn, run.run_id, worker, adapter.adapter_id, {
                "status": new.status, "artifact_sha256": new.artifact_sha256, "gate_reason": reason,
                **(selection.summary() if selection else {}),
            })
            if new.status == PROMOTED:  # the gate moves it, under the policy someone set
                move_in(conn, self.store, run.specialist, alias, adapter.adapter_id, gate_actor(run),
                        f"auto-promoted by the gate of run {run.run_id} "
                        f"({self._policy_of(conn, run)}): {reason}")
            elif held:
                request_in(conn, self.store, run.specialist, alias, adapter.adapter_id, gate_actor(run),
                           f"the gate passed run {run.run_id} ({reason}); {alias} is protected")
        return self.registry.adapter(adapter.adapter_id)  # as committed, with contract hashes

    def _policy_of(self, conn: Connection, run: TrainingRun) -> str:
        """Whose policy the run's gate applied, as its ``training.queued`` recorded it."""
        found = self.store.of_types([TrainingQueued.TYPE], [run_stream(run.run_id)], conn=conn)
        queued = logged(found[0]).event if found else None
        if not isinstance(queued, TrainingQueued) or queued.policy_source is None:
            return "policy not recorded"
        return f"policy {queued.policy_source}, set by {queued.policy_author or 'nobody known'}"


def gate_actor(run: TrainingRun) -> str:
    """Who promotes when the gate does: the gate of that run, not the worker process."""
    return f"gate:{run.run_id}"
