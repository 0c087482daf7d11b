"""Lineage benchmark on PostgreSQL: upstream, downstream, as-of, proofs and the ancestry audit
over a log of 1M events, 100k rewards and 2,040 adapter versions in chains 51 long.

    .venv/bin/python bench/lineage.py [--reuse] [--samples 200] [--events 1000000]
        [--rewards 100000] [--chains 40] [--length 51] [--admin-url URL]

Needs PostgreSQL (scripts/services.sh up; HCP_TEST_POSTGRES_URL or --admin-url). The data
(bench/lineage_build.py) takes minutes to build; ``--reuse`` keeps the database
``hcp_bench_lineage`` and its artifacts (under ~/.cache/hcp-bench-world: the world of
bench/world.py) for the next run and builds only what is missing; without it a scratch
database is dropped at the end.

Each figure is p50 / p95 over ``--samples`` calls of the service the API and CLI use,
beside a ceiling measured in the same run (a primary-key lookup of the row the query
starts from; for the audit, reading every reward and event of the ancestry) and the
ratio p95 / ceiling p95. Goals: upstream and single-event downstream p95 < 50 ms;
inclusion proof < 10 ms; audit of the deepest (51-version) ancestry < 10 s. Inclusion
proofs and the audit come from the audit package (tree builder, signer, proofs,
auditor): measured when this build has them, else reported "not available".
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from lineage_build import WORLD_DB, WORLD_DIR, Shape, adapter_of, build, built  # bench/, beside this script
from scratch import named_database
from sqlalchemy import text

from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine

GOALS_MS = {"upstream": 50.0, "downstream event": 50.0, "inclusion proof": 10.0, "audit": 10_000.0}


def main() -> None:
    args = parse_args()
    shape = Shape(args.events, args.rewards, args.chains, args.length)
    data_dir = Path(args.data_dir if args.reuse else tempfile.mkdtemp(prefix="hcp-bench-lineage-"))
    name = args.db_name if args.reuse else f"hcp_bench_{uuid.uuid4().hex[:8]}"
    with named_database(args.admin_url, name, keep=args.reuse) as (url, _):
        parts = container(url, data_dir)
        try:
            if not built(parts, shape):  # resumes a partial build (bench/world.py builds in pieces)
                print(f"building {shape} (once; --reuse keeps it) …", flush=True)
                build(parts, shape, data_dir, lambda line: print(f"  {line}", flush=True))
            run(parts, shape, args.samples, random.Random(args.seed))
        finally:
            parts.close()
            if not args.reuse:
                remove_tree(data_dir)


def remove_tree(root: Path) -> None:
    """Delete a scratch data dir; stored artifacts are read-only, so open them up first."""
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


def container(url: str, data_dir: Path) -> Container:
    options: dict[str, Any] = {"database_url": url, "data_dir": data_dir, "kafka_bootstrap": "",
                               "redis_url": ""}
    if "checkpoint_key_file" in Settings.model_fields:  # the audit package signs checkpoints
        options["checkpoint_key_file"] = signing_key_file(data_dir)
    return Container(Settings(**options), make_engine(url))


def signing_key_file(data_dir: Path) -> Path:
    path = data_dir / "bench.key"
    if not path.exists():
        from audit.keys import SigningKey

        data_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(SigningKey.generate("bench.hcp").skey())
    return path


def run(parts: Container, shape: Shape, samples: int, rng: random.Random) -> None:
    with parts.engine.connect() as conn:
        counts = {t: conn.execute(text(f"SELECT count(*) FROM {t}")).scalar()  # noqa: S608
                  for t in ("events", "reward_records", "adapter_versions", "manifest_members")}
    print("data: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()))
    deepest = adapter_of(shape, 0, shape.length - 1)
    print(f"deepest: {deepest}, {len(parts.ancestry.ancestors(deepest))} versions to its root")
    first_blocks = range(shape.chains * shape.block)  # sessions whose rewards trained roots
    sessions = [f"bench-{rng.choice(first_blocks):07d}" for _ in range(samples)]
    events = [str(rng.choice(parts.store.read_stream(s)[-2:]).event_id) for s in sessions]
    adapter_pk = pk_lookup(parts, "adapter_versions", "adapter_id", [deepest] * samples)
    event_pk = pk_lookup(parts, "events", "event_id", events)
    moves = parts.aliases.history("coding", "production", limit=10_000)
    span = (moves[-1].moved_at, moves[0].moved_at)
    times = [span[0] + (span[1] - span[0]) * rng.random() - timedelta(seconds=1) for _ in range(samples)]
    figure("upstream (deepest)", timed(parts.upstream.of, [deepest] * samples), adapter_pk)
    figure("downstream event", timed(parts.downstream.of_event, events), event_pk)
    figure("downstream session", timed(parts.downstream.of_stream, sessions), event_pk)
    versions = [rng.randint(1, 5) for _ in range(max(samples // 4, 10))]
    figure("downstream contract version",
           timed(lambda v: parts.downstream.of_contract_version("default", v), versions), adapter_pk)
    figure("as-of", timed(parts.as_of.at, times), adapter_pk)
    proofs(parts, events, event_pk)
    audit(parts, deepest)


def proofs(parts: Container, events: Sequence[str], floor: list[float]) -> None:
    if not all(hasattr(parts, a) for a in ("tree_builder", "checkpoint_signer", "proofs")):
        print("inclusion proof:  not available (no tree builder / signer / proofs in this build)")
        return
    from audit.verify import verify_inclusion_bundle

    started = time.perf_counter()
    parts.tree_builder.build()
    parts.checkpoint_signer.sign()
    print(f"tree and checkpoint: {time.perf_counter() - started:.1f} s (incremental with --reuse)")
    answers: dict[str, Any] = {}

    def prove(event_id: str) -> None:
        answers[event_id] = parts.proofs.inclusion(uuid.UUID(event_id))

    figure("inclusion proof", timed(prove, events), floor)
    verifier = parts.verifier
    figure("inclusion verify", timed(lambda e: verify_inclusion_bundle(answers[e].bundle, verifier),
                                     events), timed(lambda e: verify_floor(answers[e].bundle.proof), events),
           goal_key="inclusion proof")


def verify_floor(proof: Sequence[bytes]) -> None:
    """Verification's unavoidable work: one Ed25519 signature check (the checkpoint's) and
    one SHA-256 per proof node."""
    _FLOOR_KEY.verify(_FLOOR_SIGNATURE, _FLOOR_MESSAGE)
    for node in proof:
        hashlib.sha256(b"\x01" + node + node).digest()


_FLOOR_PRIVATE = Ed25519PrivateKey.generate()
_FLOOR_KEY, _FLOOR_MESSAGE = _FLOOR_PRIVATE.public_key(), b"hcp checkpoint\n1000000\n" + bytes(44)
_FLOOR_SIGNATURE = _FLOOR_PRIVATE.sign(_FLOOR_MESSAGE)


def audit(parts: Container, deepest: str) -> None:
    if not hasattr(parts, "auditor"):
        print("audit (deepest):  not available (no auditor in this build)")
        return
    reports: list[Any] = []
    took = timed(lambda a: reports.append(parts.auditor.adapter(a)), [deepest] * 3)
    figure("audit (deepest)", took, timed(lambda a: read_ancestry(parts, a), [deepest] * 3))
    report = reports[-1]
    print(f"  audit verdict: ok={getattr(report, 'ok', '?')}")
    for mismatch in list(getattr(report, "mismatches", []))[:5]:
        print(f"    {mismatch.line() if hasattr(mismatch, 'line') else mismatch}")


def read_ancestry(parts: Container, adapter_id: str) -> None:
    """The audit's floor: every reward and event of every manifest of the ancestry, read."""
    for version in parts.registry.versions(parts.ancestry.ancestors(adapter_id)).values():
        after, page = 0, parts.manifest_index.members(version.manifest_id, 0, 1000)
        while page:
            rewards = parts.rewards.by_ids(m.reward_id for m in page)
            parts.store.get_many(e for r in rewards for e in r.event_ids)
            after = page[-1].reward_position
            page = parts.manifest_index.members(version.manifest_id, after, 1000)


def pk_lookup(parts: Container, table: str, column: str, keys: Sequence[str]) -> list[float]:
    query = text(f"SELECT * FROM {table} WHERE {column} = :k")  # noqa: S608 (constants)

    def lookup(key: str) -> None:
        with parts.engine.connect() as conn:
            conn.execute(query, {"k": key}).first()

    return timed(lookup, keys)


def timed(fn: Callable[[Any], object], cases: Sequence[Any]) -> list[float]:
    for case in cases[:3]:
        fn(case)  # warm the pool and the caches
    out = []
    for case in cases:
        started = time.perf_counter_ns()
        fn(case)
        out.append((time.perf_counter_ns() - started) / 1e6)
    return out


def figure(label: str, values: list[float], ceiling: list[float], goal_key: str | None = None) -> None:
    p50, p95 = quantiles(values)
    c95 = quantiles(ceiling)[1]
    goal = GOALS_MS.get(goal_key or label.split(" (")[0])
    verdict = "" if goal is None else f"  goal p95 < {goal:g} ms: {'met' if p95 < goal else 'NOT MET'}"
    print(f"{label:28} p50 {p50:9.2f} ms  p95 {p95:9.2f} ms   ceiling p95 {c95:8.3f} ms  "
          f"ratio {p95 / c95:7.1f}{verdict}", flush=True)


def quantiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    return statistics.median(values), cuts[18]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--rewards", type=int, default=100_000)
    p.add_argument("--chains", type=int, default=40)
    p.add_argument("--length", type=int, default=51, help="versions per chain (the deepest: 50 ancestors)")
    p.add_argument("--samples", type=int, default=200)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--reuse", action="store_true", help="keep the database and artifacts for the next run")
    p.add_argument("--db-name", default=WORLD_DB, help="the database --reuse keeps")
    p.add_argument("--data-dir", default=str(WORLD_DIR),
                   help="with --reuse: where the artifacts and the base model are kept")
    p.add_argument("--admin-url", default=os.environ.get("HCP_TEST_POSTGRES_URL", ""))
    args = p.parse_args()
    if not args.admin_url:
        p.error("no PostgreSQL: set HCP_TEST_POSTGRES_URL (scripts/services.sh env) or --admin-url")
    return args


if __name__ == "__main__":
    main()
