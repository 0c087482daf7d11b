"""Subjects waiting for a judge: asked between the evaluator's polls, rewarded once.

The live evaluator and re-evaluation jobs score a contract with judges from the verdicts
the log holds; a subject missing one is added to ``judge_backlog`` with the batch's other
rewards (evaluators/backlog_rows.py). Here, between polls, the due ones are taken one at
a time: the subject is read back from the log (the same events whoever reads them), its
requests rendered, the judge asked for what the log lacks (each answer recorded as
``judge.verdict`` at once), and the reward stored with the row marked done in one
transaction: one reward per (subject, version), as everywhere.

A judge that cannot answer (its endpoint down, its model not registered) defers the row
with the reason (``last_error``) and a growing wait, and the step ends: the worker goes
back to the log, nothing is scored in the judge's place, and nothing is lost. A verdict
that does not parse is not a failure of the judge: the reward records it as an error.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.engine import Engine

from contract.problems import ContractInvalid
from contract.rubric import ExpressionError
from contract.subject import Subject
from contract.versions import ContractVersions
from evaluators import backlog_rows as rows
from evaluators.active import CompiledVersions
from evaluators.backlog_rows import Waiting
from evaluators.judging import JudgeUnavailable, Judging
from evaluators.model import RewardRecord, failed_reward, reward_for
from evaluators.rewards import RewardStore
from evaluators.scoring import evaluate_with_judges, split_of
from evaluators.subjects import SubjectReader
from events.store import EventStore
from kernel.clock import utcnow

log = logging.getLogger(__name__)

LEASE = timedelta(minutes=5)  # a claimed row is not taken by another process for this long
FIRST_WAIT_S, LONGEST_WAIT_S = 5.0, 600.0  # after a failed ask: 5 s, 10 s, 20 s ... 10 min


@dataclass(frozen=True)
class BacklogStep:
    judged: int = 0  # rows done: a reward stored (or found stored)
    deferred: int = 0  # rows whose judge could not answer (see their last_error)
    due: int = 0  # rows due when the step began


def wait_after(attempts: int) -> timedelta:
    return timedelta(seconds=min(LONGEST_WAIT_S, FIRST_WAIT_S * 2 ** max(0, attempts)))


class JudgeBacklog:
    def __init__(self, engine: Engine, store: EventStore, contracts: ContractVersions,
                 rewards: RewardStore, judging: Judging, subject_budget_s: float | None = None) -> None:
        self.engine, self.contracts, self.rewards, self.judging = engine, contracts, rewards, judging
        self.subjects = SubjectReader(store)
        self._versions = CompiledVersions(contracts, subject_budget_s)

    def step(self, budget_s: float = 10.0, limit: int = 32) -> BacklogStep:
        """Judge the due rows until ``budget_s`` is spent or a judge cannot answer."""
        started, now = time.monotonic(), utcnow()
        with self.engine.connect() as conn:
            found = rows.due(conn, now, limit)
        judged = 0
        for item in found:
            if time.monotonic() - started > budget_s:
                break
            with self.engine.begin() as conn:
                if not rows.claim(conn, item, now, now + LEASE):
                    continue  # another process has it
            try:
                self._judge(item)
            except JudgeUnavailable as exc:
                self._defer(item, str(exc))
                return BacklogStep(judged, 1, len(found))
            judged += 1
        return BacklogStep(judged, 0, len(found))

    def _judge(self, item: Waiting) -> None:
        """The row's reward stored and the row done, in one transaction."""
        record = self._reward(item)
        with self.engine.begin() as conn:
            self.rewards.record([record] if record is not None else [], conn)
            rows.done(conn, item)

    def _reward(self, item: Waiting) -> RewardRecord | None:
        try:
            version = self._versions.get(item.contract_name, item.contract_version)
        except (ContractInvalid, ExpressionError) as exc:  # would fail the same way forever
            log.warning("%s under %s@%s cannot be scored: %s", item.subject_id, item.contract_name,
                        item.contract_version, exc)
            return None
        subject = self._subject(item)
        if subject is None:
            log.warning("judge backlog: %s is not in the log as recorded; nothing to score", item.subject_id)
            return None
        try:
            evaluation, subject_input = evaluate_with_judges(subject, version, self.judging, ask=True)
        except JudgeUnavailable:
            raise
        except Exception as exc:  # one poison subject must not stop the backlog: recorded
            log.exception("judging %s under %s failed", subject.id, version.ref.ref)
            return failed_reward(subject, version.ref, f"{type(exc).__name__}: {exc}",
                                 split_of(subject, version.compiled.document.harness))
        if evaluation is None or not evaluation.applicable:
            return None
        return reward_for(subject, version.ref, evaluation, subject_input)

    def _subject(self, item: Waiting) -> Subject | None:
        found = self.subjects.closed_at({item.stream_id: [item.closer_seq]}, {item.subject_kind})
        return next((s for s in found if s.id == item.subject_id), None)

    def _defer(self, item: Waiting, error: str) -> None:
        log.warning("judge unavailable for %s under %s@%s (attempt %d): %s", item.subject_id,
                    item.contract_name, item.contract_version, item.attempts + 1, error)
        with self.engine.begin() as conn:
            rows.defer(conn, item, error, wait_after(item.attempts))

    def waiting(self, status: str | None = rows.WAITING, limit: int = 100,
                tenant: str | None = None) -> list[Waiting]:
        """The backlog's rows (oldest first): what waits, and why."""
        with self.engine.connect() as conn:
            return rows.listed(conn, status, limit, tenant)

    def due_now(self) -> bool:
        """Whether some waiting subject may be asked for now."""
        with self.engine.connect() as conn:
            return bool(rows.due(conn, utcnow(), 1))

    def counts(self) -> dict[str, Any]:
        with self.engine.connect() as conn:
            return rows.counts(conn)
