"""Evaluator benchmark: reward records/s for a five-criterion contract over a log of N events,
against the ceiling of reading those events and bulk-inserting as many reward rows; and
the rate of re-evaluating that history under a newly published version.

    .venv/bin/python bench/evaluate.py [--events 100000] [--repeats 3] [--processes 1 2]
                                       [--batch N] [--sqlite]

Needs PostgreSQL (scripts/services.sh up) unless --sqlite. It creates a throw-away
database, writes N events (three-turn conversations with routing, tool calls and
feedback) and prints:

* evaluator: the embedded worker (database log, one process) from the first poll until
  every subject is scored and committed: rewards/s and events/s; and, in runs of their own,
  as many processes as cores, each reading a share of the log (`hcp evaluator
  --processes N`), from when all are built until the last has drained its share;
* ceiling: in the same run, with as many processes as the evaluator ran, reading the same
  N events from the store (with more than one process, each reads its share as the
  evaluator processes read theirs) and COPYing the same number of reward rows into a bare
  table shaped like reward_records (no keys, no triggers, no scoring); and the ratio, which
  a perfect evaluator would bring to 1.0 at any process count;
* both read the log after one untimed read of it (see ``warm_up``);
* re-evaluation: a second version published, its history job run to the end (one
  process: `hcp contract reevaluate`'s run; more: the evaluator processes find the
  publication and share the job's chunks, timed as above): rewards/s and events/s, and
  its ratio to the ceiling;
* with more than one run (``--repeats``, each on a fresh database), the median ratios: one
  run's ratio moves by +-0.07 here between runs minutes apart.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from db_cpu import DatabaseCpu
from load import load_average
from scratch import fresh_database  # bench/scratch.py, beside this script
from sqlalchemy import Column, MetaData, Table
from sqlalchemy.engine import Engine, make_url

from evaluators import evaluator as worker_module
from evaluators.evaluator import DEFAULT_BATCH, Totals
from evaluators.model import reward_id_for
from evaluators.reevaluation import Reevaluations
from evaluators.reward_writes import JSON_COLUMNS, to_row
from evaluators.rewards import RewardQuery, RewardStore
from evaluators.tables import reward_records
from events.feed import DatabaseLogReader
from events.log_share import LogShare
from events.model import EventMetadata, NewEvent
from events.sql_store import SqlEventStore
from hcp import migrate
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.collector import settle_garbage_collector
from kernel.db import make_engine
from kernel.sql import insert_rows

CONTRACT = """
[contract]
name = "{name}"
description = "five criteria, one gate"
schema_version = 1

[harness]
base_model = "hcp-tiny"
tool_allowlist = ["web.search", "files.read"]

[harness.router]
default_specialist = "chat"

[harness.specialists.chat]
[harness.specialists.coding]

[evaluation]
subject = "turn"

[[evaluation.criteria]]
id = "answered"
weight = {w}
expression = "counts.answered_turns > 0 ? 1.0 : 0.0"

[[evaluation.criteria]]
id = "feedback"
weight = 2.0
expression = "feedback.count > 0 ? (feedback.rating + 1.0) / 2.0 : 0.5"

[[evaluation.criteria]]
id = "brevity"
weight = 1.0
expression = "size(assistant_text) <= 400 ? 1.0 : 0.5"

[[evaluation.criteria]]
id = "tools"
weight = 1.0
expression = '''counts.tool_calls == 0 ? 1.0
    : double(counts.tool_calls - counts.tool_errors) / double(counts.tool_calls)'''

[[evaluation.criteria]]
id = "on_topic"
weight = 0.5
expression = "user_text.contains('help') ? 1.0 : 0.8"

[[evaluation.gates]]
id = "allowed_tools"
expression = "counts.tools_disallowed == 0"

[training]
eligible = "score >= 0.6"
"""


def main() -> None:
    args = parse_args()
    scoring = Stopwatch(worker_module, "score_subjects")
    ratios: dict[int, list[float]] = {n: [] for n in args.processes}
    history: dict[int, list[float]] = {n: [] for n in args.processes}
    for _ in range(args.repeats):
        for processes in args.processes:
            live, rescored = run_once(args, scoring, processes)
            ratios[processes].append(live)
            history[processes].append(rescored)
    if args.repeats > 1:
        for processes, found in ratios.items():
            print(f"median of {len(found)} runs, {_processes(processes)}: ratio "
                  f"{statistics.median(found):.3f}; re-evaluation "
                  f"{statistics.median(history[processes]):.3f}")


def run_once(args: argparse.Namespace, scoring: Stopwatch, processes: int) -> tuple[float, float]:
    """One run on a fresh database: the ratios to the ceiling of ``processes`` evaluator
    processes following the log, then re-scoring it under a new version."""
    with database(args) as url:
        container, rewards, jobs = bench_log(url, args.events)
        engine = container.engine
        events = container.store.head()
        print(f"log:          {events:,} events")

        with Cpu(url) as evaluator_cpu:
            if processes == 1:
                totals, seconds, engine_seconds = drain_here(container, args.batch, scoring)
            else:
                engine.dispose()  # (the processes are forked: none may share a connection)
                totals, seconds, engine_seconds = drain_in_processes(url, args.batch, processes)
        rate = totals.rewards / seconds
        print(f"evaluator, {_processes(processes)}: {totals.rewards:,} rewards from "
              f"{totals.events:,} events in {seconds:.2f} s = {rate:,.0f} rewards/s, "
              f"{totals.events / seconds:,.0f} events/s ({engine_seconds / seconds / processes:.0%} "
              f"of it in the contract engine: inputs and CEL)")

        with Cpu(url) as ceiling_cpu:
            ceiling = ceiling_rate(container, rewards, totals.rewards, url, processes, args.batch)
        print(f"ceiling, {_processes(processes)}: read {events:,} events + bulk-insert "
              f"{totals.rewards:,} reward rows into a bare table: {ceiling:,.0f} rows/s")
        print(f"ratio:        {rate / ceiling:.3f}")
        per = 1000 / totals.rewards
        print(f"CPU per 1k rewards: evaluator {evaluator_cpu.python * per:.3f} s + PostgreSQL "
              f"{evaluator_cpu.database * per:.3f} s; ceiling {ceiling_cpu.python * per:.3f} s + PostgreSQL "
              f"{ceiling_cpu.database * per:.3f} s (Python: this process and its children, their start "
              f"included; {load_average()})", flush=True)
        publish(container, 2)
        if processes == 1:  # as `hcp contract reevaluate` runs it
            started = time.perf_counter()
            jobs.run(jobs.start("bench", 2).job_id)
            seconds = time.perf_counter() - started
        else:  # the processes find the publication in the log and share its job's chunks,
            # timed until the job has finished (not until the last process has seen that)
            engine.dispose()
            _, seconds, _ = drain_in_processes(url, args.batch, processes, done=lambda: any(
                j.status != "running" for j in jobs.jobs("bench", 2)))
        [job] = jobs.jobs("bench", 2)
        rescored = rewards.count("bench", 2)
        print(f"re-evaluate, {_processes(processes)}: {rescored:,} rewards over "
              f"{job.to_position:,} positions in {seconds:.2f} s = {rescored / seconds:,.0f} "
              f"rewards/s, {job.to_position / seconds:,.0f} events/s (ratio to ceiling "
              f"{rescored / seconds / ceiling:.3f})")
        engine.dispose()
        return rate / ceiling, rescored / seconds / ceiling


def bench_log(url: str, events: int) -> tuple[Container, RewardStore, Reevaluations]:
    """The contract published (its re-evaluation of the empty history done, so that all
    scoring is live), ``events`` events written and read once (``warm_up``)."""
    engine = make_engine(url)
    container = Container(Settings(database_url=url, kafka_bootstrap=""), engine)
    rewards = RewardStore(engine)
    publish(container, 1)
    jobs = Reevaluations(engine, container.store, container.contracts, rewards)
    jobs.run(jobs.start("bench", 1).job_id)
    write_events(container, events)
    warm_up(container)
    return container, rewards, jobs


def _processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"


def drain_here(container: Container, batch: int, scoring: Stopwatch) -> tuple[Totals, float, float]:
    """The embedded worker in this process, from the first poll until every subject is
    scored and committed: its totals, the seconds, and the seconds in the contract engine."""
    worker = container.evaluator("bench", batch,
                                 reader=DatabaseLogReader(container.engine, container.store, "bench"))
    settle_garbage_collector()  # as `hcp evaluator` does once its worker is built
    scoring.seconds = 0.0
    started = time.perf_counter()
    totals = worker.drain(timeout=3600)
    seconds = time.perf_counter() - started
    worker.saves.close()
    return totals, seconds, scoring.seconds


def drain_in_processes(url: str, batch: int, count: int,
                       done: Callable[[], bool] | None = None) -> tuple[Totals, float, float]:
    """``count`` worker processes, each with a share of the log (as `hcp evaluator
    --processes` starts them), timed from when all are built and start together until
    the last has drained its share (or, given ``done``, until it is true: looked at every
    5 ms): the summed totals, the seconds, and the summed seconds in the contract engine."""
    context = multiprocessing.get_context("fork")
    ready, finished, start = context.Queue(), context.Queue(), context.Event()
    children = [context.Process(target=_drain_share,
                                args=(url, batch, LogShare(k, count), ready, start, finished))
                for k in range(count)]
    for child in children:
        child.start()
    for _ in children:
        ready.get(timeout=600)
    started = time.perf_counter()
    start.set()
    if done is not None:
        while not done():
            time.sleep(0.005)
        seconds = time.perf_counter() - started
    results = [finished.get(timeout=3600) for _ in children]
    if done is None:
        seconds = time.perf_counter() - started
    for child in children:
        child.join()
    if any(isinstance(r, str) for r in results):
        raise SystemExit(f"an evaluator process failed: {[r for r in results if isinstance(r, str)]}")
    totals = Totals()
    for events, subjects, stored, _ in results:
        totals.events, totals.subjects, totals.rewards = (totals.events + events,
                                                          totals.subjects + subjects,
                                                          totals.rewards + stored)
    return totals, seconds, sum(r[3] for r in results)


def _drain_share(url: str, batch: int, share: LogShare, ready: Any, start: Any, done: Any) -> None:
    try:
        engine = make_engine(url)
        container = Container(Settings(database_url=url, kafka_bootstrap=""), engine)
        scoring = Stopwatch(worker_module, "score_subjects")
        worker = container.evaluator("bench", batch, share=share)
        settle_garbage_collector()
        ready.put(share.index)
        start.wait()
        totals = worker.drain(timeout=3600)
        worker.saves.close()
        engine.dispose()
        done.put((totals.events, totals.subjects, totals.rewards, scoring.seconds))
    except BaseException as exc:  # reported to the parent, which stops the bench
        done.put(f"share {share}: {exc!r}")
        raise


class Stopwatch:
    """Times every call of ``module.name`` from now on."""

    def __init__(self, module: object, name: str) -> None:
        self.seconds = 0.0
        wrapped = getattr(module, name)

        def timed(*args: object, **kwargs: object) -> object:
            started = time.perf_counter()
            try:
                return wrapped(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started

        setattr(module, name, timed)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"))
    parser.add_argument("--sqlite", action="store_true", help="Use a SQLite file instead")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--processes", type=int, nargs="+", default=sorted({1, os.cpu_count() or 1}),
                        help="Evaluator processes, each count in runs of its own (default: 1 "
                        "and one per core; more than one: each reads a share of the log)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="Runs, each on a fresh database (default 3; the median is printed)")
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH,
                        help="Most events per evaluator poll (default: the product's)")
    return parser.parse_args()


class Cpu:
    """CPU seconds over a phase: this process and the children it joined (``python``), and
    PostgreSQL's backends for the bench's database (``database``; 0 on SQLite)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.python = self.database = 0.0

    def __enter__(self) -> Cpu:
        self._before = _python_cpu()
        self._admin = make_engine(self.url) if self.url.startswith("postgresql") else None
        name = make_url(self.url).database or ""
        self._db = None if self._admin is None else DatabaseCpu(self._admin, name)
        if self._db is not None:
            self._db.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.python = _python_cpu() - self._before
        if self._db is not None and self._admin is not None:
            self._db.__exit__(*exc)
            self.database = self._db.seconds
            self._admin.dispose()


def _python_cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def database(args: argparse.Namespace) -> Iterator[str]:
    if args.sqlite:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
            migrate.upgrade(url)
            yield url
        return
    with fresh_database(args.postgres) as url:
        yield url


def publish(container: Container, version: int) -> None:
    text_ = CONTRACT.format(name="bench", w=1.0 if version == 1 else 3.0)
    draft = container.contracts.create_draft("bench", text_, "bench",
                                             parent_version=version - 1 or None)
    container.contracts.publish("bench", draft.version, "bench")


def write_events(container: Container, total: int) -> None:
    batch: list[NewEvent] = []
    conversation = 0
    while container.store.head() + len(batch) < total:
        batch += conversation_events(conversation)
        conversation += 1
        if len(batch) >= 1000:
            container.store.append(batch)
            batch = []
    if batch:
        container.store.append(batch)


def conversation_events(n: int) -> list[NewEvent]:
    stream, specialist = f"bench-{n}", ("chat", "coding")[n % 2]
    meta = EventMetadata(specialist=specialist, adapter_version=f"{specialist}@1")
    out: list[NewEvent] = []
    for turn in range(3):
        out += [NewEvent(stream, "turn.user", {"text": f"please help with {n}.{turn}"}, metadata=meta),
                NewEvent(stream, "route.decided", {"specialist": specialist,
                                                   "adapter_version": f"{specialist}@1"}, metadata=meta)]
        if turn == 1:
            call = f"c{n}"
            out += [NewEvent(stream, "tool.called", {"call_id": call, "tool": "web.search",
                                                     "arguments": {"q": "x"}}, metadata=meta),
                    NewEvent(stream, "tool.result", {"call_id": call, "ok": n % 5 != 0,
                                                     "output": "result"}, metadata=meta)]
        out += [NewEvent(stream, "turn.assistant", {"text": "an answer " * (n % 60)}, metadata=meta),
                NewEvent(stream, "feedback.given", {"thumbs": ("up", "down")[(n + turn) % 3 == 0]},
                         schema_version=2, metadata=meta)]
    out.append(NewEvent(stream, "episode.completed", {"outcome": "success"}, metadata=meta))
    return out


def warm_up(container: Container) -> None:
    """Read the whole log once, untimed, so that the evaluator and the ceiling read it in
    the same state. The first read of freshly written rows costs more than any later one
    (PostgreSQL sets each row's commit hint bits then, and the process's memory is first
    touched): 0.78-1.12 s against 0.63-0.89 s for 30k events here. Unwarmed, the
    evaluator paid that and the ceiling, which reads second, did not. (Deployed, the relay
    has read each row before the evaluator does.)"""
    for _ in container.store.iter_all():
        pass


def ceiling_rate(container: Container, rewards: RewardStore, count: int, url: str,
                 processes: int = 1, batch: int = DEFAULT_BATCH) -> float:
    """Read every event, then bulk-insert ``count`` reward-shaped rows into a bare table
    (COPY on PostgreSQL, the reward store's own path; executemany on SQLite). With more
    than one process, each reads its share of the log and COPYs its part of the rows, in
    processes of its own, timed as ``drain_in_processes`` times the evaluator's."""
    bare, rows = ceiling_rows(container, rewards, count)
    if processes > 1:
        container.engine.dispose()  # (forked next: no connection may be shared)
        return count / ceiling_in_processes(url, bare, rows, processes, batch)
    started = time.perf_counter()
    read = ceiling_work(container, bare, rows)
    seconds = time.perf_counter() - started
    assert read == container.store.head()
    return count / seconds


def ceiling_in_processes(url: str, bare: Table, rows: Rows, count: int, batch: int) -> float:
    """The ceiling's work split as the evaluator processes split theirs: share K of N reads
    its share of the log ``batch`` events at a time (``read_share``, the evaluator's own
    read) and COPYs every N-th row. Seconds from when all are ready to when the last is
    done."""
    context = multiprocessing.get_context("fork")
    ready, finished, start = context.Queue(), context.Queue(), context.Event()
    children = [context.Process(target=_ceiling_share,
                                args=(url, bare, rows[k::count], LogShare(k, count), batch,
                                      ready, start, finished))
                for k in range(count)]
    for child in children:
        child.start()
    for _ in children:
        ready.get(timeout=600)
    started = time.perf_counter()
    start.set()
    results = [finished.get(timeout=3600) for _ in children]
    seconds = time.perf_counter() - started
    for child in children:
        child.join()
    if any(isinstance(r, str) for r in results):
        raise SystemExit(f"a ceiling process failed: {[r for r in results if isinstance(r, str)]}")
    return seconds


def _ceiling_share(url: str, bare: Table, rows: Rows, share: LogShare, batch: int,
                   ready: Any, start: Any, done: Any) -> None:
    try:
        engine = make_engine(url)
        store = SqlEventStore(engine)
        head = store.head()
        ready.put(share.index)
        start.wait()
        after = 0
        while after < head:
            _, after = store.read_share(share, after, batch)
        with engine.begin() as conn:
            insert_rows(conn, bare, rows, JSON_COLUMNS)
        engine.dispose()
        done.put(share.index)
    except BaseException as exc:  # reported to the parent, which stops the bench
        done.put(f"share {share}: {exc!r}")
        raise


Rows = list[dict[str, Any]]


def ceiling_rows(container: Container, rewards: RewardStore, count: int) -> tuple[Table, Rows]:
    """The bare table (created) and ``count`` rows shaped like the first stored reward."""
    template = rewards.find(RewardQuery(limit=1))[0]
    rows = [to_row(replace(template, position=i + 1, reward_id=reward_id_for(str(i), "c", 1)))
            for i in range(count)]
    bare = Table("bare_rewards", MetaData(), *(Column(c.name, c.type) for c in reward_records.columns))
    bare.create(container.engine)
    return bare, rows


def ceiling_work(container: Container, bare: Table, rows: Rows) -> int:
    """What the ceiling times: read the whole log, COPY the rows; the events read."""
    engine: Engine = container.engine
    read = sum(1 for _ in container.store.iter_all())
    with engine.begin() as conn:
        insert_rows(conn, bare, rows, JSON_COLUMNS)  # COPY on PostgreSQL, as the store does
    return read


if __name__ == "__main__":
    main()
