"""The lineage benchmark's data: a log, rewards, and long chains of adapter versions.

Built through the stores' own bulk paths, so every row is what the server would have
written (hash-chained events, positioned rewards, frozen manifests with their members,
registered versions with their closure rows and events); only the choice of what goes in
each manifest is the bench's (a contiguous block of rewards), and each run is started and
finished in the transaction that registers its version.

* sessions of 10 events (5 turns), one reward per session judging its last turn, under
  one of five published versions of the ``default`` contract;
* rewards in contiguous blocks, one block per adapter version, generation by generation:
  block k is the manifest of chain k % C at generation k // C, so a version's manifest is
  its own slice of the reward positions (like ``dataset = "since_parent"``);
* C chains of L generations each, spread over the four specialists; every fifth
  generation of a chain is moved to its specialist's ``production`` alias.

The build is resumable: each batch of sessions (events and their rewards) and each
registration (with its alias move) commits in one transaction, so a build stopped at any
point (``deadline``, a crash, the machine wanted back) leaves a prefix of the whole, and
the next ``build`` finds where it stopped (``progress``) and goes on from there.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from evaluators.model import EVALUATOR_VERSION, RewardRecord, reward_id_for
from events.model import EventMetadata, NewEvent
from events.projections.sql import project_in, set_working_in
from hcp.bootstrap import Container
from kernel.clock import utcnow
from trainer.journal import append, lock_registry, run_stream, specialist_stream, write
from trainer.registry.aliases import move_in
from trainer.registry.in_transaction import register_in
from trainer.registry.model import NewAdapter
from trainer.runs.events import TrainingStarted
from trainer.runs.projections import RUN_PROJECTIONS, TRAINING_RUNS
from trainer.runs.tables import training_runs
from trainer.triggers.events import TriggerFired
from trainer.triggers.projections import TRIGGER_PROJECTIONS

SPECIALISTS = ("chat", "agent", "coding", "genui")
WORLD_DB = "hcp_bench_lineage"  # the 1M-event world the scale benches share (bench/world.py)
WORLD_DIR = Path.home() / ".cache" / "hcp-bench-world"  # its artifacts and key: outside any checkout
EVENTS_PER_SESSION = 10
VERSIONS = 5
WORKER = "bench-worker"
CONTRACT = Path(__file__).resolve().parents[1] / "examples" / "contracts" / "default.toml"


def world_arguments(p: argparse.ArgumentParser) -> None:
    """The options every bench on the shared world takes: where the world is kept."""
    p.add_argument("--db-name", default=WORLD_DB)
    p.add_argument("--data-dir", type=Path, default=WORLD_DIR)
    p.add_argument("--admin-url", default=os.environ.get("HCP_TEST_POSTGRES_URL", ""))


def parse_world_args(p: argparse.ArgumentParser) -> argparse.Namespace:
    """Parse, refusing to go on without a PostgreSQL to build or read the world in."""
    args = p.parse_args()
    if not args.admin_url:
        p.error("no PostgreSQL: set HCP_TEST_POSTGRES_URL (scripts/services.sh env) or --admin-url")
    return args


@dataclass(frozen=True)
class Shape:
    events: int
    rewards: int
    chains: int
    length: int  # versions per chain

    @property
    def sessions(self) -> int:
        return self.events // EVENTS_PER_SESSION

    @property
    def adapters(self) -> int:
        return self.chains * self.length

    @property
    def block(self) -> int:
        return self.rewards // self.adapters


def chain_specialist(chain: int) -> str:
    return SPECIALISTS[chain % len(SPECIALISTS)]


def adapter_of(shape: Shape, chain: int, generation: int) -> str:
    """The id the registry gives generation ``generation`` of ``chain`` (versions are
    numbered per specialist in registration order, generation-major)."""
    same = [c for c in range(shape.chains) if chain_specialist(c) == chain_specialist(chain)]
    return f"{chain_specialist(chain)}@{generation * len(same) + same.index(chain) + 1}"


@dataclass(frozen=True)
class Progress:
    sessions: int  # written with their rewards
    adapters: int  # registered (with their alias moves)

    def complete(self, shape: Shape) -> bool:
        return self.sessions >= shape.sessions and self.adapters >= shape.adapters


def build(parts: Container, shape: Shape, data_dir: Path, say: Callable[[str], None],
          deadline: float | None = None) -> bool:
    """Build what is missing of ``shape``; stop at ``deadline`` (``time.monotonic()``) after
    the transaction in flight. True when the whole shape is built."""
    started = time.perf_counter()
    hashes = _contracts(parts)
    done = progress(parts, shape)
    if done.sessions < shape.sessions:
        say(f"log: {done.sessions:,} of {shape.sessions:,} sessions written; going on")
        if not _log_and_rewards(parts, shape, hashes, say, done.sessions, deadline):
            return False
        say(f"log and rewards built in {time.perf_counter() - started:.0f} s")
    base = _base_model(parts, data_dir)
    if done.adapters < shape.adapters:
        say(f"registry: {done.adapters:,} of {shape.adapters:,} versions registered; going on")
    for block in range(done.adapters, shape.adapters):
        generation, chain = divmod(block, shape.chains)
        register(parts, shape, chain, generation, base)
        if chain == shape.chains - 1:
            say(f"generation {generation + 1}/{shape.length} registered "
                f"({time.perf_counter() - started:.0f} s)")
        if _past(deadline) and block + 1 < shape.adapters:
            say(f"stopped at the deadline: {block + 1:,} of {shape.adapters:,} versions registered")
            return False
    say(f"built in {time.perf_counter() - started:.0f} s")
    return True


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def progress(parts: Container, shape: Shape) -> Progress:
    """How much of ``shape`` the database holds: whole batches of sessions (each batch is
    one transaction, so the first batch whose first stream is missing is where the log
    stopped) and registered versions (one transaction each, in block order)."""
    from trainer.registry.tables import adapter_versions

    batches = range(0, shape.sessions, SESSIONS_PER_BATCH)
    lo, hi = 0, len(batches)  # the first batch not written, by bisection
    while lo < hi:
        mid = (lo + hi) // 2
        if parts.store.read_stream(_stream(batches[mid]), limit=1):
            lo = mid + 1
        else:
            hi = mid
    sessions = min(lo * SESSIONS_PER_BATCH, shape.sessions)
    with parts.engine.connect() as conn:
        adapters = len(conn.execute(select(adapter_versions.c.adapter_id)).all())
    return Progress(sessions, adapters)


def _contracts(parts: Container) -> dict[int, str]:
    """The five published versions of ``default`` (those a resumed build finds are kept)."""
    document = CONTRACT.read_text()
    versions = {v.version: v for v in parts.contracts.versions("default")}
    for version in range(1, VERSIONS + 1):
        if version not in versions:
            parts.contracts.create_draft("default", document, "bench")
        if version not in versions or versions[version].status == "draft":
            parts.contracts.publish("default", version, "bench")
    return {v: parts.contracts.get("default", v).content_hash for v in range(1, VERSIONS + 1)}


SESSIONS_PER_BATCH = 2000


def _log_and_rewards(parts: Container, shape: Shape, hashes: dict[int, str],
                     say: Callable[[str], None], start: int, deadline: float | None) -> bool:
    """Sessions from ``start`` on, a batch's events and rewards in one transaction."""
    for first in range(start, shape.sessions, SESSIONS_PER_BATCH):
        sessions = range(first, min(first + SESSIONS_PER_BATCH, shape.sessions))
        with parts.engine.begin() as conn:
            appended = parts.store.append([e for s in sessions for e in _session(shape, s)], conn)
            events = [a.event for a in appended]
            rewards = []
            for offset, session in enumerate(sessions):
                if session >= shape.rewards:
                    break
                subject = events[offset * EVENTS_PER_SESSION:(offset + 1) * EVENTS_PER_SESSION][-2:]
                rewards.append(reward(shape, session, subject, hashes))
            parts.rewards.record(rewards, conn)
        if (first // SESSIONS_PER_BATCH) % 10 == 9:
            say(f"{first + SESSIONS_PER_BATCH:,} sessions written")
        if _past(deadline) and sessions.stop < shape.sessions:
            say(f"stopped at the deadline: {sessions.stop:,} of {shape.sessions:,} sessions written")
            return False
    return True


def _stream(session: int) -> str:
    return f"bench-{session:07d}"


def _session(shape: Shape, session: int) -> list[NewEvent]:
    block = min(session // max(shape.block, 1), shape.adapters - 1)
    meta = EventMetadata(tenant=f"tenant-{session % 50}", specialist=chain_specialist(block % shape.chains))
    stream = _stream(session)
    return [NewEvent(stream, "turn.user" if i % 2 == 0 else "turn.assistant",
                     {"text": f"question {session}.{i}" if i % 2 == 0 else f"answer {session}.{i}"},
                     metadata=meta) for i in range(EVENTS_PER_SESSION)]


def reward(shape: Shape, session: int, subject: list[Any], hashes: dict[int, str]) -> RewardRecord:
    version = 1 + session % VERSIONS
    block = session // shape.block
    specialist = chain_specialist(block % shape.chains) if block < shape.adapters else None
    subject_id = f"turn:{subject[0].stream_id}:{subject[-1].stream_seq}"
    score = 0.5 + (session % 7) / 14
    return RewardRecord(
        reward_id=reward_id_for(subject_id, "default", version), subject_id=subject_id,
        subject_kind="turn", stream_id=subject[0].stream_id, first_position=subject[0].position,
        last_position=subject[-1].position, event_ids=tuple(str(e.event_id) for e in subject),
        contract_name="default", contract_version=version, contract_hash=hashes[version],
        evaluator_version=EVALUATOR_VERSION, score=score, components={"quality": score}, gates={},
        split="held_out" if session % 5 == 0 else "train", specialist=specialist,
        adapter_version=None, eligible=specialist is not None)


def _base_model(parts: Container, data_dir: Path) -> str:
    del data_dir  # base models live under the models root (the registry refuses others)
    if any(b.name == "bench-base" for b in parts.registry.base_models()):
        return "bench-base"
    directory = parts.settings.resolved_models_dir / "bench-base"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps({"model_type": "bench"}))
    (directory / "model.safetensors").write_bytes(b"bench weights")
    parts.registry.register_base_model("bench-base", directory, "bench")
    return "bench-base"


def register(parts: Container, shape: Shape, chain: int, generation: int, base: str) -> None:
    specialist, block = chain_specialist(chain), generation * shape.chains + chain
    parent = adapter_of(shape, chain, generation - 1) if generation else None
    cut_from, cut_to = block * shape.block, (block + 1) * shape.block
    artifact = _artifact(parts, adapter_of(shape, chain, generation))
    with parts.engine.begin() as conn:
        lock_registry(conn)
        manifest_id, manifest = parts.manifests.freeze_in(conn, specialist, None, cut_from, cut_to, "bench")
        firing_id, run_id = str(uuid.uuid4()), str(uuid.uuid4())
        fired = append(parts.store, conn, TRIGGER_PROJECTIONS, specialist_stream(specialist), TriggerFired(
            firing_id=firing_id, run_id=run_id, policy="count", reason="bench", parent_adapter_id=parent,
            dataset_cut=cut_to, cut_from=cut_from, manifest_id=manifest_id,
            manifest_hash=manifest.content_hash), "bench", specialist=specialist, adapter_version=parent)
        parts.runs.create_in(conn, {
            "run_id": run_id, "specialist": specialist, "parent_adapter_id": parent,
            "base_model": base, "manifest_id": manifest_id, "firing_id": firing_id,
            "hyper": {"steps": 1}, "gate": {}, "total_steps": 1, "created_by": "bench"}, "bench")
        project_in(conn, TRIGGER_PROJECTIONS, fired)
        _start(parts, conn, run_id, specialist)
        new = NewAdapter(
            specialist=specialist, parent_adapter_id=parent, base_model=base, training_run_id=run_id,
            manifest_id=manifest_id, hyper={"steps": 1},
            contract_versions=tuple((c["name"], c["version"]) for c in manifest.contract_versions),
            metrics={"gate": {"promote": True, "reason": "bench"}}, artifact_sha256=artifact[0],
            artifact_uri=artifact[1], status="candidate")
        adapter = register_in(conn, parts.store, new, WORKER)
        parts.runs.succeed_in(conn, run_id, WORKER, adapter.adapter_id, {
            "status": new.status, "artifact_sha256": new.artifact_sha256, "gate_reason": "bench"})
        if generation % 5 == 4 or generation == shape.length - 1:  # with it: a resumed build misses none
            move_in(conn, parts.store, specialist, "production", adapter.adapter_id, "bench",
                    "bench promotion")


def _start(parts: Container, conn: Connection, run_id: str, specialist: str) -> None:
    """What a worker's claim does: the run is running under its lease (one event)."""
    write(parts.store, conn, RUN_PROJECTIONS, run_stream(run_id), TrainingStarted(
        run_id=run_id, attempt=1, worker=WORKER, taken_over_from=None), WORKER, specialist=specialist)
    set_working_in(conn, TRAINING_RUNS, training_runs.c.run_id == run_id,
                   lease_until=utcnow() + timedelta(hours=1))


def _artifact(parts: Container, adapter_id: str) -> tuple[str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
        (Path(tmp) / "adapter_model.safetensors").write_bytes(adapter_id.encode())
        ref = parts.artifacts.put_dir(tmp)
    return ref.sha256, ref.uri


def built(parts: Container, shape: Shape) -> bool:
    """Whether a reused database already holds this shape's data, whole."""
    return progress(parts, shape).complete(shape)
