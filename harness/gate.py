"""The gate's ``tasks`` rollout harness: held-out task sessions answered again, checked again.

The trainer's rollout gate (``trainer.gate.rollout``) gives each held-out subject to the
parent and to the successor; this harness reads the task the subject recorded (its
``turn.user`` carries the context and the hidden check spec), generates greedily with the
model it was built for, the same way the harness serves (the engine's offline mode, the
family's token budget and stop rule), and says what each answer did (``respond``): the same tool
call, tool result, ``x.check`` and outcome events the serving harness records. Those
replace the logged ones, so the contract judges what each model really wrote.

The composition root gives it to the gate as ``rollout_harness = "tasks"``.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox
from harness.session import ANSWER_EVENT_TYPES, answer_events, task_of
from harness.tasks import Task
from inference.engine import Engine
from inference.memo import provenance
from inference.rollouts import engine_target
from trainer.gate.rollout import Answer, RolloutCase, RolloutTarget
from trainer.gate.shapes import MemoProvenance

NAME = "tasks"


def case_task(case: RolloutCase) -> Task:
    """The task a held-out subject recorded.

    Raises:
        ValueError: the subject is not a task session.
    """
    payloads = [e.payload for e in case.subject.events if e.type == "turn.user"]
    task = task_of(payloads)
    if task is None:
        raise ValueError(f"subject {case.subject.id} recorded no task (not a harness task session)")
    return task


class TasksRolloutHarness:
    replaces = ANSWER_EVENT_TYPES

    def __init__(self, engine: Engine, target: RolloutTarget, batch_size: int = 128,
                 sandbox: CodeSandbox | None = None) -> None:
        self.engine, self.target, self.batch_size, self.sandbox = engine, target, batch_size, sandbox
        self.memo: MemoProvenance | None = None

    def generate(self, prompts: Sequence[str]) -> list[str]:
        raise ValueError("the tasks harness answers recorded tasks, not bare prompts")

    def answer_texts(self, cases: Sequence[RolloutCase]) -> list[str]:
        from harness.probes import greedy_samples

        samples = greedy_samples(self.engine, engine_target(self.target),
                                 [case_task(c) for c in cases], self.batch_size)
        self.memo = provenance(samples)
        return [s.text for s in samples]

    def memo_record(self) -> MemoProvenance | None:
        """Where the last answers came from (``inference.memo.provenance``)."""
        return self.memo

    def respond(self, cases: Sequence[RolloutCase], texts: Sequence[str]) -> list[Answer]:
        tasks = [case_task(c) for c in cases]
        checks = run_checks([t.check for t in tasks], list(texts), self.sandbox)
        return [Answer(text, tuple(answer_events(task, check)), check.passed,
                       str(task.meta.get("group", task.family)))
                for task, text, check in zip(tasks, texts, checks, strict=True)]


def tasks_harness(target: RolloutTarget, sandbox: CodeSandbox | None = None, *,
                  engine: Engine) -> TasksRolloutHarness:
    return TasksRolloutHarness(engine, target, sandbox=sandbox)
