"""The main job, embedded: the whole continual-learning loop in one process.

Round 1 records harness traffic, scores it under the published contract, fires
training for each specialist and registers root adapters. Round 2 serves traffic with
those adapters, publishes a reweighted contract (dry-run first, then history is
re-scored) and trains successors from their parents. It ends with the auditor's view:
the lineage of one successor, hashes re-checked, and the hash chain verified.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from contract.versions import ContractVersions, VersionNotFound
from evaluators.dryrun import Selection
from events.ingest import IngestLimits, ingest
from harness.synthetic import synthetic_sessions
from hcp.bootstrap import Container
from trainer.runs.dispatch import InProcessDispatcher

ACTOR = "user:demo"
BASE_MODEL = "hcp-tiny"  # the name examples/contracts/default.toml's [harness] expects
EXAMPLE_CONTRACT = Path(__file__).parents[1] / "examples" / "contracts" / "default.toml"


def quiet_libraries() -> None:
    """The demo shows its own progress; transformers' per-load bars and notices are noise."""
    import warnings

    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")


def _bar(console: Console) -> Progress:
    return Progress(TextColumn("{task.description:<34}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=console, transient=False)


def ensure_base_model(trainer: Container, data_dir: Path, console: Console) -> None:
    from trainer.ml.tiny_model import build_tiny_base_model

    if any(b.name == BASE_MODEL for b in trainer.registry.base_models()):
        return
    path = build_tiny_base_model(data_dir / "models" / BASE_MODEL, seed=0)
    entry = trainer.registry.register_base_model(BASE_MODEL, path, ACTOR)
    console.print(f"base model [bold]{BASE_MODEL}[/] built locally, weights {entry.weights_sha256[:16]}…")


def ensure_published(contracts: ContractVersions, document: str, console: Console) -> int:
    try:
        return contracts.latest_published("default").version
    except VersionNotFound:
        draft = contracts.create_draft("default", document, ACTOR)
        done = contracts.publish("default", draft.version, ACTOR)
        console.print(f"contract [bold]{done.ref}[/] published ({done.content_hash[:16]}…)")
        return done.version


def record_traffic(container: Container, sessions: int, seed: int, quality: float,
                   adapters: dict[str, str], console: Console) -> int:
    limits = IngestLimits(container.settings.max_batch_events, container.settings.max_payload_bytes)
    written = 0
    with _bar(console) as bar:
        task = bar.add_task(f"recording {sessions} sessions", total=sessions)
        for session in synthetic_sessions(sessions, seed, quality, adapters):
            appended = ingest(container.store, session, limits, container.references)
            written += sum(a.created for a in appended)
            bar.advance(task)
    return written


def score(container: Container, console: Console) -> None:
    worker = container.evaluator(group="demo")
    head = container.store.head()
    with _bar(console) as bar:
        task = bar.add_task("evaluating under active contracts", total=head)

        def show(step: Any) -> None:
            if step.job_progress is not None:
                bar.update(task, description="re-scoring history")
            bar.advance(task, step.events)

        totals = worker.drain(timeout=600, on_step=show)
        bar.update(task, completed=head)
    console.print(f"  {totals.rewards} reward records written for {totals.subjects} subjects")


def train(trainer: Container, console: Console) -> list[Any]:
    fired = [e for e in trainer.triggers.evaluate(actor="system:demo-triggers") if e.fired]
    for evaluation in trainer.triggers.evaluate(actor="system:demo-triggers"):
        assert evaluation.fired is None or not evaluation.fired.created  # never twice
    for evaluation in fired:
        console.print(f"  trigger fired for [bold]{evaluation.specialist}[/]: {evaluation.note}")
    with console.status("training successors (tiny model, CPU)…"):
        assert isinstance(trainer.dispatcher, InProcessDispatcher)  # embedded: this process trains
        trainer.dispatcher.join()
    return [trainer.runs.get(e.fired.run_id) for e in fired if e.fired]


def promote_candidates_by_hand(trainer: Container, console: Console) -> None:
    """Where the policy leaves promotion to people, an operator moves the alias by hand."""
    for adapter in trainer.registry.adapters(limit=1000):
        if adapter.status != "candidate":
            continue
        trainer.registry.set_status(adapter.adapter_id, "promoted", ACTOR,
                                    "reviewed the gate report; promoting by hand", alias="production")
        console.print(f"  {adapter.specialist}@{adapter.version} passed its gate as a candidate; "
                      "an operator moved production to it")


def adapters_table(trainer: Container) -> Table:
    table = Table("specialist", "version", "parent", "status", "held-out (succ / parent)",
                  "artifact sha256")
    for a in sorted(trainer.registry.adapters(limit=1000), key=lambda a: (a.specialist, a.version)):
        gate = a.metrics.get("gate", {})
        parent = next((p.version for p in trainer.registry.adapters(a.specialist, 1000)
                       if p.adapter_id == a.parent_adapter_id), None)
        table.add_row(a.specialist, str(a.version), str(parent or "root"), a.status,
                      f"{_num(gate.get('successor', {}).get('heldout_margin'))} / "
                      f"{_num(gate.get('parent', {}).get('heldout_margin'))}",
                      a.artifact_sha256[:16] + "…")
    return table


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else "-"


def run_demo(container: Container, sessions: int = 240,
             console: Console | None = None) -> dict[str, Any]:
    console = console or Console()
    trainer = container
    contracts = container.contracts
    console.rule("[bold]1. a deployed model records its experience")
    ensure_base_model(trainer, container.settings.data_dir, console)
    v1 = ensure_published(contracts, EXAMPLE_CONTRACT.read_text(), console)
    record_traffic(container, sessions, seed=1, quality=0.6, adapters={}, console=console)
    score(container, console)

    console.rule("[bold]2. triggers fire training; roots are gated and registered")
    runs_1 = train(trainer, console)
    console.print(adapters_table(trainer))
    promote_candidates_by_hand(trainer, console)

    console.rule("[bold]3. the evaluation team edits the contract")
    reweighted = contracts.draft_from("default", v1, ACTOR)
    document = reweighted.document.replace('id = "brevity"\nweight = 1.0',
                                           'id = "brevity"\nweight = 3.0')
    draft = contracts.edit_draft("default", reweighted.version, document, ACTOR)
    report = container.dry_runs.run(
        "default", draft.version, Selection(last=200), baseline=v1)
    summary = report.to_json()["report"]
    console.print(f"  dry-run of {draft.ref} vs v{v1} over {summary.get('count')} subjects: "
                  f"mean delta {_num(summary.get('mean_delta'))}, became eligible "
                  f"{summary.get('became_eligible')}, ineligible {summary.get('became_ineligible')}")
    _, check = container.publisher.publish("default", draft.version, ACTOR)
    if check is not None:
        console.print(f"  publish check: {check.describe()}")
    console.print(f"  published {draft.ref}; history is re-scored, v{v1}'s rewards stay; "
                  f"v{v1} keeps serving until it is moved")

    console.rule("[bold]4. the promoted adapters serve; successors train from their parents")
    serving = {a.specialist: f"{a.specialist}@{a.version}"
               for a in trainer.registry.adapters(limit=1000)}
    record_traffic(container, sessions, seed=2, quality=0.7, adapters=serving, console=console)
    score(container, console)
    runs_2 = train(trainer, console)
    console.print(adapters_table(trainer))

    console.rule("[bold]5. the auditor: lineage and tamper evidence")
    successors = [a for a in trainer.registry.adapters(limit=1000) if a.parent_adapter_id]
    lineage = trainer.lineage.chain(successors[0].adapter_id, deep=True) if successors else []
    for link in lineage:
        refs = ", ".join(f"{c['name']}@{c['version']}" for c in link["contract_versions"])
        refs = escape(f"[{refs}]")
        console.print(f"  {link['specialist']}@{link['version']}  verified={link['verified']}  "
                      f"manifest {link['manifest']['content_hash'][:12]}…  contracts {refs}  "
                      f"artifact {link['artifact']['sha256'][:12]}…")
    verify = container.store.verify()
    console.print(f"  hash chain: {'intact' if verify.intact else 'BROKEN'} over {verify.checked} events")
    return {"runs": len(runs_1) + len(runs_2), "successors": len(successors),
            "chain_intact": verify.intact, "events": verify.checked}
