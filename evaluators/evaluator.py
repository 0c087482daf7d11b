"""The evaluator worker: follow the event log, score finished subjects, store rewards.

One step is: poll a batch, refresh the active contract versions, find the subjects the
batch closes, score each under every version that applies, store the rewards in one
transaction, and commit the consumer position with them (database log) or after them
(Kafka). With the database log the save runs in the background while the worker reads
and scores the next batch (evaluators/saving.py: one save in flight, each with its own
batch's position, a failure stops the worker before any later batch is saved). The Kafka
reader stays sequential: its consumer is not thread-safe, and a rebalance in the next
poll would change which partitions a pending batch's offsets may be committed to.
Publishing a version (an event in the same log) starts its re-evaluation of
history, which the worker advances a chunk at a time between polls.

Why the order matters:

* Rewards are durable before the offset is committed. A crash between the two
  redelivers the batch; the reward store skips what already exists, so nothing is lost
  and nothing is doubled (at-least-once delivery, exactly-once rewards). The database
  reader's checkpoint commits in the rewards' own transaction: exactly-once outright,
  a batch at a time in log order, also while the next batch is being scored.
* Re-evaluation jobs of publications in the batch start before the position commits,
  so a crash cannot leave a publication consumed and its job never started (a job
  started twice is the same job).
* The active versions are refreshed after the poll, before scoring (with the database
  reader, when the batch holds a contract event: see ``_versions``). A version published
  at position p commits before any event at a position > p can commit (positions are
  allocated under the log lock in commit order), so any polled event after p is visible
  only once the version is: it is scored under it. Events at or before p are covered by
  the version's re-evaluation job, whose ``to_position`` (the head when it starts) is
  >= p. Between the two, no subject is missed; overlap is absorbed by uniqueness.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sqlalchemy.exc import DBAPIError

from contract.events import Published
from contract.versions import ContractVersions, VersionConflict, VersionNotFound, contract_stream
from evaluators.active import ActiveContracts
from evaluators.judge_backlog import JudgeBacklog
from evaluators.judging import Judging
from evaluators.model import RewardRecord
from evaluators.reevaluation import Job, Reevaluations
from evaluators.rewards import RewardStore
from evaluators.saving import BackgroundSave
from evaluators.scoring import Awaiting, ScoringVersion, score_subjects, subject_kinds
from evaluators.session_expiry import SessionExpiry
from evaluators.subjects import SubjectReader
from events.feed import LogReader, LogUnavailable, ResultsTransaction
from events.model import RecordedEvent
from events.store import EventStore

log = logging.getLogger(__name__)

CONTRACT_PUBLISHED = Published.TYPE
CONTRACT_STREAM = contract_stream("")  # the prefix of every contract's stream
JOBS_LOOK_S = 1.0  # how long a re-evaluation job started elsewhere may wait for a worker
REFRESH_S = 10.0  # the longest the database reader goes without re-reading active versions
EXPIRY_LOOK_S = 5.0  # how often idle sessions are looked for (evaluators/session_expiry.py)
# The judge backlog (evaluators/judge_backlog.py): looked at this often, and for at most
# this long per step (a judge answers in seconds; the log must not wait much longer).
BACKLOG_LOOK_S, BACKLOG_BUSY_S, BACKLOG_IDLE_S = 2.0, 2.0, 10.0
# The most events one poll hands to a step. A poll returns what is there (it waits only
# when there is nothing), so this bounds a step only while catching up. Larger steps pay
# the fixed costs (the read, the reward writers' lock and its reads, the checkpoint and a
# commit) less often, but keep a batch's objects alive longer. Saved in the background
# and with `hcp evaluator`'s collector settings (kernel/collector.py: no collection at
# all during a 30k-event catch-up), 2000 beat 500 in every paired run (wall and CPU time,
# on a loaded machine); before the background save and those settings, two full
# collections per 30k events (0.25 s) had cost about what the saved commits gave back.
DEFAULT_BATCH = 2000


@dataclass(frozen=True)
class StepResult:
    events: int = 0
    subjects: int = 0
    # Newly stored in this step; redelivered subjects add nothing. With the database
    # reader, the previous batch's, whose background save finished in this step.
    rewards: int = 0
    jobs_started: tuple[Job, ...] = ()  # created by this step; existing ones are not repeated
    job_progress: Job | None = None  # the re-evaluation chunk advanced after the poll


@dataclass
class Totals:
    events: int = 0
    subjects: int = 0
    rewards: int = 0
    jobs: dict[str, Job] = field(default_factory=dict)

    def add(self, step: StepResult) -> None:
        self.events += step.events
        self.subjects += step.subjects
        self.rewards += step.rewards
        for job in (*step.jobs_started, *([step.job_progress] if step.job_progress else [])):
            self.jobs[job.job_id] = job


class Evaluator:
    def __init__(self, store: EventStore, contracts: ContractVersions, rewards: RewardStore,
                 reevaluations: Reevaluations, reader: LogReader[RecordedEvent],
                 batch_size: int = DEFAULT_BATCH, subject_budget_s: float | None = None,
                 expiry: SessionExpiry | None = None, judging: Judging | None = None,
                 backlog: JudgeBacklog | None = None) -> None:
        self.store, self.rewards, self.reevaluations = store, rewards, reevaluations
        self.expiry = expiry
        self._next_expiry = 0.0  # monotonic time of the next look for idle sessions
        # The judges' verdicts the log holds; a subject missing one goes to the backlog,
        # which asks the judge between polls (evaluators/judge_backlog.py).
        self.judging = judging if judging is not None else Judging(store)
        self.backlog = backlog
        self._next_backlog = 0.0  # monotonic time of the next look at the judge backlog
        self.reader, self.batch_size = reader, batch_size
        self.active = ActiveContracts(contracts, subject_budget_s)
        self.subjects = SubjectReader(store)
        self.saves = BackgroundSave(0)  # the database reader's batches (see _store)
        self._next_jobs_look = 0.0  # monotonic time; 0: look at the first step
        self._next_refresh = 0.0  # when the active versions are read again regardless

    def poll_once(self, timeout: float = 1.0) -> StepResult:
        """Score one polled batch; commit the consumer position with or after the rewards.

        With the database reader the batch's save (rewards and position, one transaction)
        is left running in the background; the next step collects it, an empty poll too,
        so a worker that found nothing new has everything it scored saved.
        """
        events = self.reader.poll(self.batch_size, timeout)
        if not events:
            stored = self.finish()
            # Nothing is in flight now. A share's database reader moves past the other
            # shares' events: keep its checkpoint up with it. A Kafka reader whose last
            # commit failed (its broker away) tries it again. A no-op otherwise.
            self.reader.commit()
            return StepResult(rewards=stored)
        try:
            versions = self._versions(events)  # after the poll: see the module docstring
            subjects = self.subjects.closed_by(events, subject_kinds(versions))
            awaiting: list[Awaiting] = []
            scored = score_subjects(subjects, versions, self.judging, awaiting)
            # Before the position can commit: a publication's job must not be skipped.
            started = tuple(self._start_jobs(events))
            transaction = self.reader.results_transaction()  # bound to this batch's position
            stored = self._store(scored, transaction, awaiting)
        except BaseException:
            self._abandon()
            raise
        if transaction is None:
            self.reader.commit()  # only now: every reward of the batch is durable
        return StepResult(len(events), len(subjects), stored, started)

    def _store(self, records: list[RewardRecord], transaction: ResultsTransaction | None,
               awaiting: list[Awaiting] | None = None) -> int:
        """Store a batch's rewards; the number of rewards newly stored by this call.

        A reader that commits its position in the rewards' transaction (the database
        reader's) has it run in the background: first the previous batch's save is
        collected (durable now, or its error raised here, before this batch is handed
        over), then this batch's starts with the position this batch reached. Other
        readers: stored here and now.
        """
        waiting = awaiting or []
        if transaction is None:
            return len(self.rewards.record(records, awaiting=waiting))
        stored = self.saves.wait()
        self.saves.submit(lambda: self._save(transaction, records, waiting))
        return stored

    def _save(self, transaction: ResultsTransaction, records: list[RewardRecord],
              awaiting: list[Awaiting]) -> int:
        with transaction() as conn:
            return len(self.rewards.record(records, conn, awaiting))

    def _abandon(self) -> None:
        """After a failure: let the save in flight end (it commits its batch with its
        position, or nothing), then go back to the last committed position: what was
        polled after it comes again."""
        try:
            self.saves.wait()
        except Exception as exc:  # noqa: BLE001 (the failure being raised says more)
            log.warning("the batch being saved was not stored either (%s); it comes again", exc)
        finally:
            self.reader.rewind()

    def finish(self) -> int:
        """Wait for the save in flight (if any): the rewards it stored. On failure the
        reader goes back to the last committed position and the error is raised."""
        try:
            return self.saves.wait()
        except BaseException:
            self.reader.rewind()
            raise

    def _versions(self, events: Sequence[RecordedEvent]) -> list[ScoringVersion]:
        """The active versions, read again unless nothing can have changed them.

        A version's status changes only together with an event on its contract's stream
        (in the same transaction); so for a reader that sees every such event in position
        order (the database reader) a batch without one leaves them as they were. Kafka
        readers see their partitions only, and read them every time; so does everyone now
        and then.
        """
        now = time.monotonic()
        if (not self.reader.sees_every_contract_event or now >= self._next_refresh
                or any(e.stream_id.startswith(CONTRACT_STREAM) for e in events)):
            self._next_refresh = now + REFRESH_S
            return self.active.refresh()
        return self.active.versions

    def step(self, timeout: float = 1.0) -> StepResult:
        """One poll, then one chunk of re-evaluation if any job is running.

        While none is, jobs are looked for at most every ``JOBS_LOOK_S`` (a query per
        step cost as much as scoring a tenth of the batch): one this worker starts, or
        that was running at the last look, is advanced at once; one another process
        started waits for the next look.
        """
        result = self.poll_once(timeout)
        self._expire_idle()
        judged = self._judge_waiting(busy=bool(result.events))
        job = None
        if result.jobs_started or time.monotonic() >= self._next_jobs_look:
            job = self.reevaluations.step()
            self._next_jobs_look = 0.0 if job is not None else time.monotonic() + JOBS_LOOK_S
        return StepResult(result.events, result.subjects, result.rewards + judged, result.jobs_started,
                          job)

    def _judge_waiting(self, busy: bool) -> int:
        """Now and then, ask the judges for the subjects waiting for them (a bounded step,
        shorter while the log has more for this worker): the rewards it stored."""
        if self.backlog is None or time.monotonic() < self._next_backlog:
            return 0
        try:
            done = self.backlog.step(budget_s=BACKLOG_BUSY_S if busy else BACKLOG_IDLE_S)
        except DBAPIError as exc:  # the next look tries again; scoring goes on
            log.warning("judging waiting subjects failed (%s)", exc)
            done = None
        except Exception:  # a bug in judging must not stop the scoring of the log
            log.exception("judging waiting subjects failed; the next look tries again")
            done = None
        more = done is not None and done.judged > 0 and done.deferred == 0 and done.due > done.judged
        self._next_backlog = 0.0 if more else time.monotonic() + BACKLOG_LOOK_S
        return done.judged if done is not None else 0

    def _expire_idle(self) -> None:
        """Now and then, end the sessions idle past the timeout: their ``session.expired``
        comes back through the log, and the subjects it closes are scored as any other."""
        if self.expiry is None or time.monotonic() < self._next_expiry:
            return
        self._next_expiry = time.monotonic() + EXPIRY_LOOK_S
        try:
            swept = self.expiry.sweep()
        except Exception:  # noqa: BLE001 (the next look tries again; scoring goes on)
            log.exception("looking for idle sessions failed; looking again in %.0f s",
                          EXPIRY_LOOK_S)
            return
        if swept.expired:
            log.info("%d idle sessions ended (session.expired)", swept.expired)

    def run(self, stop: threading.Event, on_step: Callable[[StepResult], None] | None = None,
            poll_timeout: float = 1.0, max_backoff: float = 10.0) -> None:
        """Until ``stop`` is set; the batch in flight finishes first, and its save. Failures
        of the database or of the log's broker are retried with backoff: a batch not
        stored is redelivered, an offset not committed is committed at a later step (or
        its batch redelivered), so nothing is skipped and nothing doubled."""
        backoff, busy = 0.0, False
        while not stop.is_set():
            try:
                result = self.step(0.0 if busy else poll_timeout)
            except (DBAPIError, LogUnavailable) as exc:
                backoff = min(max(backoff * 2, 0.5), max_backoff)
                log.warning("evaluator step failed (%s); retrying in %.1fs", exc, backoff)
                stop.wait(backoff)
                continue
            backoff, busy = 0.0, result.job_progress is not None
            if on_step is not None and (result.events or result.rewards or result.job_progress):
                on_step(result)
        try:
            stored = self.finish()
        except DBAPIError as exc:
            log.warning("the last batch was not stored (%s); it comes again at the next start", exc)
            return
        if on_step is not None and stored:
            on_step(StepResult(rewards=stored))

    def drain(self, timeout: float = 120.0,
              on_step: Callable[[StepResult], None] | None = None) -> Totals:
        """Until the log is consumed and no re-evaluation job is running (``--once``)."""
        totals, deadline, wait = Totals(), time.monotonic() + timeout, 0.0
        while time.monotonic() < deadline:
            result = self.step(wait)
            totals.add(result)
            if on_step is not None and (result.events or result.rewards or result.job_progress):
                on_step(result)
            idle = not result.events and result.job_progress is None
            if idle and self._caught_up():
                return totals
            # Polls do not wait while there is work, so the step that finds the log
            # consumed returns at once (not after a poll timeout); wait only when an empty
            # poll left us behind (a Kafka fetch still on its way, a commit in flight).
            wait = 0.5 if idle else 0.0
        self.finish()
        raise TimeoutError(f"evaluator did not catch up within {timeout:.0f}s")

    def _caught_up(self) -> bool:
        if self.reevaluations.jobs(status="running"):
            return False
        if self.backlog is not None and self.backlog.due_now():
            self._next_backlog = 0.0  # judge them at the next step
            return False
        return self.reader.caught_up()

    def _start_jobs(self, events: Sequence[RecordedEvent]) -> list[Job]:
        started = []
        for event in events:
            if event.type != CONTRACT_PUBLISHED or not event.stream_id.startswith(CONTRACT_STREAM):
                continue
            name, version = event.payload.get("name"), event.payload.get("version")
            try:
                # A redelivered or re-read publication finds its job already there: nothing
                # is started, and nothing is said.
                job = self.reevaluations.start_new(str(name), int(str(version)))
                if job is not None:
                    started.append(job)
            except (VersionNotFound, VersionConflict, ValueError) as exc:
                log.info("no re-evaluation for %s@%s: %s", name, version, exc)
        return started

