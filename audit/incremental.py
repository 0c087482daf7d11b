"""``hcp audit all --since-checkpoint``: the audit of what a signed checkpoint does not
already vouch for, plus a seeded sample of what it does.

From a checkpoint that verifies with the log's key (the latest one stored, or one the
auditor kept): the events after it re-hashed and proven an extension of it, a sample of
the older events proven in it (``audit.checks.since``); every projected table's rows
that the events after it wrote compared with their events, and a sample of the older
rows (``events.projections.window``); the reward chain from the last seal the checkpoint
covers; and for the versions and manifests among those rows, what ``audit all`` checks
of them (examples rebuilt, held-out sets, artifacts re-hashed). The checks that read only
the few events they judge (contracts, serving and alias chains) run whole.

The report names the checkpoint, the positions re-hashed, and the sample's size and seed:
the same seed draws the same rows, so a second auditor can repeat the audit exactly. What
it does not cover (an older row or event outside the sample, a ghost manifest among the
older ones) is what the full audit, run on a schedule, is for.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from audit.checkpoint_store import CheckpointStore
from audit.checkpoints import CheckpointError, load_checkpoints
from audit.checks import approvals, contracts, heldout, registry, since, training
from audit.checks.approvals import APPROVAL_TYPES
from audit.checks.contracts import CONTRACT_TYPES, SERVING_TYPE
from audit.checks.since import Base
from audit.keys import VerifierKey
from audit.manifests import check_training_examples, rebuild_frozen
from audit.report import AuditReport, Findings
from audit.sources import AuditSources, Progress, Run, findings_of, rehash_artifacts
from evaluators.chain import SEAL_STREAM, SEAL_TYPE
from events.projections.rebuild import WindowReport
from events.projections.window import Covered, Window
from kernel.errors import Invalid
from trainer.registry.events import AdapterRegistered

DEFAULT_SAMPLE = 100


def new_seed() -> str:
    """A seed chosen when the audit runs, so no one can know the sample before it is drawn."""
    return secrets.token_hex(8)


def latest_base(checkpoints: CheckpointStore) -> Base:
    """The latest checkpoint the server stored (its signature is the audit's first check).

    Raises:
        Invalid: none has been signed yet.
    """
    latest = checkpoints.latest()
    if latest is None:
        raise Invalid("no checkpoint has been signed yet: run the full audit (`hcp audit all`) and sign "
                      "one (`hcp audit checkpoint create`)")
    return Base(latest.checkpoint, latest.note, f"checkpoint {latest.position}")


def kept_base(data: bytes, verifier: VerifierKey, source: str) -> Base:
    """The newest of the checkpoints an auditor kept (``hcp audit checkpoint export``, or one
    signed note).

    Raises:
        Invalid: the file holds none, or one that does not verify with ``verifier``.
    """
    try:
        kept = load_checkpoints(data, verifier)
    except CheckpointError as exc:
        raise Invalid(f"{source}: {exc}") from None
    if not kept:
        raise Invalid(f"{source} holds no checkpoint")
    newest = max(kept, key=lambda k: k.checkpoint.size)
    return Base(newest.checkpoint, newest.note, source)


def audit_since(src: AuditSources, base: Base, verifier: VerifierKey, window: Window,
                on_progress: Progress | None = None) -> AuditReport:
    run = Run(f"all since {base.label()}", on_progress)
    head = src.store.head()
    run.report.coverage = {"kind": "incremental", "checkpoint": base.source, "checkpoint_size": base.size,
                           "rehashed": [base.size + 1, head] if head > base.size else [],
                           "sample": window.sample, "sample_manifests": window.groups,
                           "seed": window.seed}
    if not run.check("checkpoint", "the checkpoint audited from", "its signed note, with the log's key",
                     lambda f: since.check_base(f, base, verifier)):
        run.report.coverage["stopped"] = "the checkpoint does not verify: nothing can be audited from it"
        return run.finish()
    later = [c for c in src.checkpoints.all() if c.checkpoint.size > base.size]
    run.check("event_log", "events, merkle_nodes, audit_checkpoints",
              f"events after {base.size} re-hashed and proven an extension of the checkpoint; "
              f"{window.sample} older ones re-hashed and proven in it", lambda f: _log(src, f, base, later,
                                                                                      verifier, window))
    projected = _projections(src, run, window)
    of = src.store.of_types
    run.check("contract_documents", "contract_versions", "each stored document re-hashed", lambda f:
              contracts.check_documents(f, src.contracts.stored_rows()))
    run.check("serving_chain", "contract.serving_moved events", "the move before each", lambda f:
              contracts.check_serving_chain(f, of([SERVING_TYPE])))
    logged = contracts.logged_hashes(of(CONTRACT_TYPES))
    run.check("reward_records", "reward_records", "the reward chain from the last seal the checkpoint "
              f"covers; {window.sample} older rewards with their neighbours", lambda f: _rewards(
                  src, f, base, window, logged, run))
    steps = of([*APPROVAL_TYPES, registry.MOVED])
    run.check("alias_chain", "alias.moved events", "the move before each", lambda f:
              registry.check_alias_chain(f, steps))
    run.check("alias_approvals", "alias.* events", "moves of protected aliases against their approvals",
              lambda f: approvals.check_approvals(f, steps))
    _derived(src, run, base, projected)
    return run.finish()


def _log(src: AuditSources, f: Findings, base: Base, later: list[Any], verifier: VerifierKey,
         window: Window) -> None:
    nodes = src.nodes()
    since.check_log_since(f, src.store, nodes, base, later, verifier)
    since.check_sampled_events(f, src.store, nodes, base, window)


def _rewards(src: AuditSources, f: Findings, base: Base, window: Window,
             logged: dict[tuple[str, int], str], run: Run) -> None:
    seals = src.store.of_types([SEAL_TYPE], [SEAL_STREAM])
    start, sampled = since.check_rewards_since(f, src.rewards, seals, base, window, logged)
    run.report.coverage["rewards_rehashed_after"] = start
    run.report.coverage["rewards_sampled"] = len(sampled)


def _projections(src: AuditSources, run: Run, window: Window) -> WindowReport | None:
    """Every projected table's rows in the window compared with their events."""
    if src.rebuilder is None:
        return None
    started = time.perf_counter()
    report = src.rebuilder.check_window(window, on_table=lambda c: run.progress(c.table, 1, 1))
    per_table = (time.perf_counter() - started) / max(len(report.checks), 1)
    run.report.coverage["samples"] = {table: c.sample for table, c in report.covered.items()}
    for check in report.checks:
        found = findings_of(src.rebuilder, check, per_table)
        found.note(_covered_note(report.covered[check.table], window, _grouped(check.table, src)))
        run.add(found)
    return report


def _covered_note(covered: Covered, window: Window, grouped: bool) -> str:
    seed = f"seed {window.seed!r}"
    if grouped:
        return (f"compared the rows made by the {covered.new:,} events after position {window.after} and by "
                f"{covered.sampled:,} of the {covered.older:,} older ones ({seed})")
    return (f"compared {covered.new:,} row(s) written after position {window.after} and {covered.sampled:,} "
            f"of the {covered.older:,} older ones ({seed}); every live key held to the log's")


def _grouped(table: str, src: AuditSources) -> bool:
    assert src.rebuilder is not None
    return any(p.name == table and p.group is not None for p in src.rebuilder.projections)


def _derived(src: AuditSources, run: Run, base: Base, projected: WindowReport | None) -> None:
    """What ``audit all`` derives from the registry's rows, for the window: the manifests
    frozen after the checkpoint and those sampled (examples rebuilt), the versions
    registered after it or trained on those manifests (held-out sets, recorded examples),
    and those with the sampled registry rows (artifacts re-hashed)."""
    after = base.size
    covered = projected.covered if projected is not None else {}
    frozen = sorted(covered["dataset_manifests"].positions) if "dataset_manifests" in covered else []
    frozen_events = [*src.store.at_positions(frozen).values(),
                     *src.store.scan_types([training.FROZEN], after=after)]
    fired = list(src.store.scan_types([training.FIRED], after=after))
    checked = projected.checks if projected is not None else []
    manifests_check = next((c for c in checked if c.table == "dataset_manifests"), None)
    run.check("manifest_examples", "dataset_manifests", "examples rebuilt from rewards and events, for the "
              "manifests frozen after the checkpoint and those sampled; trigger.fired hashes after it",
              lambda f: rebuild_frozen(src, f, frozen_events, fired, manifests_check, run))
    registry = src.registry.adapters()
    manifests = {e.payload["manifest_id"] for e in frozen_events}
    new = {e.payload["adapter_id"] for e in src.store.scan_types([AdapterRegistered.TYPE], after=after)}
    judged = [r for r in registry if r["adapter_id"] in new or r["manifest_id"] in manifests]
    run.check(heldout.NAME, heldout.TABLE, heldout.AGAINST + " (the versions registered after the "
              "checkpoint or trained on the manifests sampled)", lambda f: heldout.check_held_out(
                  f, judged, src.manifests, registry))
    runs = {key[0] for key in covered["training_runs"].new_keys} if "training_runs" in covered else set()
    runs |= {r["training_run_id"] for r in judged}
    run.check("training_examples", "training.succeeded events", "the examples each run of the window "
              "records, selected again from its rebuilt manifest", lambda f: check_training_examples(
                  src, f, [e for e in src.store.of_types([training.QUEUED, training.SUCCEEDED])
                           if e.payload.get("run_id") in runs]))
    rehashed = new | _keys(covered.get("adapter_versions")) | {r["adapter_id"] for r in judged}
    run.check("artifacts", "adapter_versions.artifact_sha256", "the artifact store, re-hashed (the versions "
              "of the window and those sampled)", lambda f: rehash_artifacts(
                  src, f, [r for r in registry if r["adapter_id"] in rehashed], run))


def _keys(covered: Any) -> set[Any]:
    if covered is None:
        return set()
    return {key[0] for key in [*covered.keys, *covered.new_keys]}
