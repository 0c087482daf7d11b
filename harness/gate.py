"""The gate's ``tasks`` rollout harness: held-out task sessions answered again, checked again.

The trainer's rollout gate (``trainer.gate.rollout``) gives each held-out subject to the
parent and to the successor; this harness reads the task the subject recorded (its
``turn.user`` carries the context and the hidden check spec), generates greedily with the
model it was built for, the same way the harness serves (``harness.decode``, the family's
token budget and stop rule), and says what each answer did (``respond``): the same tool
call, tool result, ``x.check`` and outcome events the serving harness records. Those
replace the logged ones, so the contract judges what each model really wrote.

The composition root registers it as ``rollout_harness = "tasks"``.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox
from harness.session import ANSWER_EVENT_TYPES, answer_events, storable, task_of
from harness.tasks import Task
from harness.tasks.catalog import FAMILIES
from trainer.gate.rollout import Answer, RolloutCase, RolloutTarget

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


def family_name(task: Task) -> str:
    """The family that sets the task's token budget and stop rule (by its specialist)."""
    return task.specialist


class TasksRolloutHarness:
    replaces = ANSWER_EVENT_TYPES

    def __init__(self, target: RolloutTarget, batch_size: int = 64,
                 sandbox: CodeSandbox | None = None) -> None:
        self.target, self.batch_size, self.sandbox = target, batch_size, sandbox

    def generate(self, prompts: Sequence[str]) -> list[str]:
        raise ValueError("the tasks harness answers recorded tasks, not bare prompts")

    def answer_texts(self, cases: Sequence[RolloutCase]) -> list[str]:
        from harness.decode import sample
        from harness.pool import ModelPool
        from harness.stops import STOPS
        from trainer.ml.load import autocast_for, base_dtype
        from trainer.ml.prompts import prompt_ids

        tasks = [case_task(c) for c in cases]
        pool = ModelPool(self.target.base_dir, self.target.device, self.target.precision)
        adapter = self.target.adapter_dir
        name = pool.ensure(adapter, "0" * 16 + adapter.name) if adapter is not None else None
        texts: dict[int, str] = {}
        dtype = base_dtype(pool.device, pool.precision)
        for fam_name in sorted({family_name(t) for t in tasks}):
            mine = [i for i, t in enumerate(tasks) if family_name(t) == fam_name]
            fam = FAMILIES[fam_name]
            prompts = [prompt_ids(pool.tokenizer, tasks[i].prompt, tasks[i].messages()) for i in mine]
            with pool.serving(name) as model, autocast_for(pool.device, dtype):
                samples = sample(model, pool.tokenizer, prompts, k=1, temperature=0.0,
                                 max_new_tokens=fam.max_new_tokens, batch_size=self.batch_size,
                                 stop=STOPS[fam.stop], device=pool.device)
            for s in samples:
                texts[mine[s.prompt_index]] = storable(s.text)
        return [texts[i] for i in range(len(cases))]

    def respond(self, cases: Sequence[RolloutCase], texts: Sequence[str]) -> list[Answer]:
        tasks = [case_task(c) for c in cases]
        checks = run_checks([t.check for t in tasks], list(texts), self.sandbox)
        return [Answer(text, tuple(answer_events(task, check)))
                for task, text, check in zip(tasks, texts, checks, strict=True)]


def tasks_harness(target: RolloutTarget, sandbox: CodeSandbox | None = None) -> TasksRolloutHarness:
    return TasksRolloutHarness(target, sandbox=sandbox)
