"""The task harness with the server answering: its traffic through ``POST /v1/chat/completions``.

Each of a task's k answers is one chat completion of a running server (``model: auto``:
the serving contract's router picks the specialist from the turn, the server serves
the adapter its alias names, by digest), sent with the task's hidden check
(``hcp.task``, recorded in ``turn.user`` so that the gate can replay the turn) and the
family's stop rule (``hcp.stop_after``). The server records the session's opening, its
route and the answer; the harness then runs the checks on what came back and posts
what the answer did (``harness.session.answer_events``: the tool call and its result,
the ``x.check`` verdict, ``episode.completed``) to the same session through the ingest
path. Requests go concurrently, so the server decodes them in shared batches.

What a turn was served by is then the server's word (its ``route.decided``), not the
harness's: ``hcp demo --stack`` proves the endpoint with its own traffic.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from events.ingest import ClientEvent
from harness.checks import CheckResult, run_checks
from harness.checks.sandbox import CodeSandbox
from harness.router import Route
from harness.serve import POST_SESSIONS, ServeStats, Sink
from harness.session import Served, answer_events, task_spec
from harness.tasks import Task
from harness.tasks.catalog import family

# Requests in flight: the server's threads and batch rows (HCP_SERVING_MAX_BATCH_ROWS,
# default 32) bound how many decode together anyway.
CONCURRENCY = 32
RETRIES = 5  # a 503 (busy, or the log unavailable) records nothing: the request is resent


class EndpointFailed(RuntimeError):
    pass


@dataclass(frozen=True)
class Answer:
    """One chat completion, as the server says it served it."""

    session: uuid.UUID
    completion: uuid.UUID  # the recorded turn.assistant's event id
    text: str
    tokens: int
    route: Route
    adapter_version: str
    contract: str  # the serving contract version that configured the answer


class EndpointHarness:
    """``TaskHarness.serve``'s answers from a server's chat endpoint."""

    def __init__(self, client: Any, sink: Sink, contract_ref: str,
                 sandbox: CodeSandbox | None = None, concurrency: int = CONCURRENCY,
                 model: str = "auto") -> None:
        self.client, self.sink, self.sandbox = client, sink, sandbox  # client: an httpx.Client
        self.contract_ref = contract_ref  # what the caller publishes; the server names what served
        self.concurrency, self.model = concurrency, model
        self.stats = ServeStats()

    def serve(self, tasks: Sequence[Task], k: int = 1, temperature: float = 0.0, seed: int = 0,
              progress: Callable[[int], None] = lambda n: None) -> list[Served]:
        """k answers per task, recorded; in task order (a task's samples together)."""
        started = time.perf_counter()
        with ThreadPoolExecutor(self.concurrency) as pool:
            futures = [[pool.submit(self.ask, task, temperature, seed * 7919 + i * k + j)
                        for j in range(k)] for i, task in enumerate(tasks)]
            answers = []
            for group in futures:
                answers.append([f.result() for f in group])
                progress(1)
        self.stats.generate_s += time.perf_counter() - started
        flat = [(task, answer) for task, group in zip(tasks, answers, strict=True) for answer in group]
        started = time.perf_counter()
        checks = run_checks([t.check for t, _ in flat], [a.text for _, a in flat], self.sandbox)
        self.stats.check_s += time.perf_counter() - started
        self._record(flat, checks)
        served = []
        for n, ((task, answer), check) in enumerate(zip(flat, checks, strict=True)):
            served.append(Served(task, answer.route, answer.adapter_version, answer.contract,
                                 answer.text, answer.tokens, check, n % k))
            self.stats.answers += 1
            self.stats.new_tokens += answer.tokens
            self.stats.by_specialist.setdefault(task.specialist, []).append(check.partial)
        return served

    def ask(self, task: Task, temperature: float, seed: int) -> Answer:
        """One answer to ``task`` from the endpoint (recorded there)."""
        fam = family(task.specialist)
        body = {"model": self.model, "messages": task.messages(), "temperature": temperature,
                "seed": seed, "max_tokens": fam.max_new_tokens,
                "hcp": {"task": task_spec(task), "stop_after": fam.stop}}
        for attempt in range(RETRIES):
            response = self.client.post("/v1/chat/completions", json=body)
            if response.status_code != 503 or attempt == RETRIES - 1:
                break
            time.sleep(min(float(response.headers.get("Retry-After", "1")), 5.0))
        if response.status_code != 200:
            raise EndpointFailed(f"POST /v1/chat/completions answered {response.status_code}: "
                                 f"{response.text[:500]}")
        return answer_of(response.json())

    def _record(self, answers: Sequence[tuple[Task, Answer]], checks: Sequence[CheckResult]) -> None:
        started = time.perf_counter()
        batch: list[ClientEvent] = []
        for n, ((task, answer), check) in enumerate(zip(answers, checks, strict=True)):
            batch += answer_record(answer, task, check)
            if (n + 1) % POST_SESSIONS == 0:
                self.sink.post(batch)
                batch = []
        if batch:
            self.sink.post(batch)
        self.stats.post_s += time.perf_counter() - started


def answer_of(body: dict[str, Any]) -> Answer:
    """The completion's text and what served it (its ``hcp`` object)."""
    served = body["hcp"]
    route = Route(str(served["specialist"]), dict(served.get("scores") or {}),
                  bool(served.get("fallback", False)))
    return Answer(uuid.UUID(str(served["session"])), uuid.UUID(body["id"].removeprefix("chatcmpl-")),
                  str(body["choices"][0]["message"].get("content") or ""),
                  int(body["usage"]["completion_tokens"]), route, str(served["adapter_version"]),
                  str(served["contract"]))


def answer_record(answer: Answer, task: Task, check: CheckResult) -> list[ClientEvent]:
    """What the answer did, after the server's own events of the session; ids derived from
    the completion's, so a resent batch adds nothing."""
    return [ClientEvent(stream_id=f"session-{answer.session}", type=kind, payload=payload,
                        event_id=uuid.uuid5(answer.completion, f"answer:{n}:{kind}"),
                        specialist=answer.route.specialist, adapter_version=answer.adapter_version,
                        contract=answer.contract, correlation_id=answer.session)
            for n, (kind, payload) in enumerate(answer_events(task, check))]
