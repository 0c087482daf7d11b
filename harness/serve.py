"""The harness: tasks in, routed, answered by the specialist's production adapter, checked,
recorded through the ingest path.

For each task the contract's router picks the specialist (``harness.router``, on the
task's system message and user message: the application a request arrives in is part of
what routes it). The specialist's ``production`` adapter is resolved through the registry
(``inference.resolve``) and answers on the process's engine (its artifact re-hashed when
loaded, beside the one base); the bare base serves a specialist that has none yet.
Answers are sampled in batches (the engine's offline mode: k per task, or greedy at
temperature 0, seeded; answers already generated come from the memo), checked
(``harness.checks``: hidden tests in the sandbox, JSON Schemas, format rules) and
recorded one session per answer
(``harness.session``) through a ``Sink``: the store's ingest function embedded, the HTTP
API in stack mode. The log is then the only truth the evaluators and the trainer see.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from contract.sections import Harness as HarnessSettings
from events.ingest import ClientEvent
from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox
from harness.router import Route, route
from harness.session import Served, session_events, storable
from harness.tasks import Task
from harness.tasks.catalog import family
from inference.engine import Engine
from inference.types import GenStats, SampleJob, Target, prompt_of

HARNESS_NAME = "hcp-harness"
POST_SESSIONS = 16  # sessions per ingest batch
# Rows (tasks x k samples) decoded together. Most answers end early and leave the batch,
# a few run to the token budget; that tail runs at nearly the cost of a full step (on the
# CPU a small batch is bound by reading the weights), so one batch of 192 rows paid it
# once where three of 64 paid it three times: 74 s against 98 s for 48 coding tasks x 4.
SERVE_BATCH_ROWS = 256


@dataclass(frozen=True)
class Production:
    """What serves a specialist now."""

    version: str  # e.g. coding@3; coding@0 is the bare base
    target: Target  # the bytes: base and adapter (None: the bare base) by digest


class AdapterSource(Protocol):
    def production(self, specialist: str) -> Production:
        """The specialist's production adapter (or the base), by digest."""


class Sink(Protocol):
    def post(self, events: Sequence[ClientEvent]) -> int:
        """Record one batch of events through the ingest path; how many were new."""


@dataclass
class ServeStats:
    answers: int = 0
    new_tokens: int = 0
    generate_s: float = 0.0
    check_s: float = 0.0
    post_s: float = 0.0
    reused: int = 0  # answers read from the memo, not generated
    by_specialist: dict[str, list[float]] = field(default_factory=dict)  # check partials

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.generate_s if self.generate_s else 0.0


class ServesTasks(Protocol):
    """What the demo drives: ``TaskHarness`` (the model in this process) or
    ``harness.endpoint.EndpointHarness`` (a server's chat endpoint)."""

    contract_ref: str
    stats: ServeStats

    def serve(self, tasks: Sequence[Task], k: int = 1, temperature: float = 0.0, seed: int = 0,
              progress: Callable[[int], None] = lambda n: None) -> list[Served]:
        """k answers per task, recorded; in task order (a task's samples together)."""


def route_task(settings: HarnessSettings, task: Task) -> Route:
    return route(settings, f"{task.system or ''}\n{task.prompt}")


class TaskHarness:
    def __init__(self, engine: Engine, adapters: AdapterSource, sink: Sink,
                 settings: HarnessSettings, contract_ref: str,
                 batch_size: int = SERVE_BATCH_ROWS, sandbox: CodeSandbox | None = None) -> None:
        self.engine, self.adapters, self.sink, self.sandbox = engine, adapters, sink, sandbox
        self.settings, self.contract_ref, self.batch_size = settings, contract_ref, batch_size
        self.stats = ServeStats()

    def serve(self, tasks: Sequence[Task], k: int = 1, temperature: float = 0.0, seed: int = 0,
              progress: Callable[[int], None] = lambda n: None) -> list[Served]:
        """k answers per task, recorded; in task order (a task's samples together)."""
        routes = [route_task(self.settings, t) for t in tasks]
        out: dict[int, list[Served]] = {}
        productions = {s: self.adapters.production(s) for s in sorted({r.specialist for r in routes})}
        for specialist, production in productions.items():
            mine = [i for i, r in enumerate(routes) if r.specialist == specialist]
            for chunk in _chunks(mine, max(1, self.batch_size // k)):
                served = self._answer([tasks[i] for i in chunk], [routes[i] for i in chunk],
                                      production, k, temperature, seed * 7919 + chunk[0])
                for i, answers in zip(chunk, served, strict=True):
                    out[i] = answers
                self._record([s for answers in served for s in answers], seed)
                progress(len(chunk))
        return [s for i in range(len(tasks)) for s in out[i]]

    def _answer(self, tasks: list[Task], routes: list[Route], production: Production, k: int,
                temperature: float, seed: int) -> list[list[Served]]:
        fam = family(tasks[0].specialist)
        job = SampleJob(production.target, tuple(prompt_of(t.prompt, t.messages()) for t in tasks),
                        fam.max_new_tokens, k, temperature, seed, fam.stop, self.batch_size)
        gen = GenStats()
        samples = self.engine.sample(job, gen)
        started = time.perf_counter()
        texts = [storable(s.text) for s in samples]
        checks = run_checks([tasks[s.prompt_index].check for s in samples], texts, self.sandbox)
        self.stats.check_s += time.perf_counter() - started
        self.stats.generate_s += gen.seconds
        self.stats.new_tokens += gen.new_tokens
        self.stats.reused += gen.reused
        self.stats.answers += len(samples)
        grouped: list[list[Served]] = [[] for _ in tasks]
        for s, text, check in zip(samples, texts, checks, strict=True):
            task = tasks[s.prompt_index]
            grouped[s.prompt_index].append(Served(
                task, routes[s.prompt_index], production.version, self.contract_ref, text,
                s.new_tokens, check, len(grouped[s.prompt_index])))
            self.stats.by_specialist.setdefault(task.specialist, []).append(check.partial)
        return grouped

    def _record(self, served: Sequence[Served], seed: int) -> None:
        started = time.perf_counter()
        batch: list[ClientEvent] = []
        for n, s in enumerate(served):
            session = uuid.uuid5(uuid.NAMESPACE_URL, f"hcp-harness:{seed}:{s.task.id}:"
                                 f"{s.adapter_version}:{s.contract}:{s.sample}:{n}:{s.text}")
            batch += session_events(s, HARNESS_NAME, session)
            if (n + 1) % POST_SESSIONS == 0:
                self.sink.post(batch)
                batch = []
        if batch:
            self.sink.post(batch)
        self.stats.post_s += time.perf_counter() - started


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
