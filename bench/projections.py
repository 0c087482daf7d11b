"""Projections at the lineage bench's scale: `hcp rebuild --check` of every projection and
`hcp audit all`, in seconds against a 60 s goal each, and the write path's cost of
projecting in the same transaction (goal: at most 5% over writing the same rows directly).

    .venv/bin/python bench/projections.py --reuse              # 1M events; the lineage bench's data
    nice -n 19 .venv/bin/python bench/projections.py --scale 0.01   # a minute or two: does it run

Needs PostgreSQL (scripts/services.sh up; HCP_TEST_POSTGRES_URL or --admin-url).

* rebuild and audit: on the data of bench/lineage.py (bench/lineage_build.py: 1M events,
  100k rewards, 2,040 adapter versions at ``--scale 1``; events and rewards scale
  linearly, chains and their length with at least 4 and 5). ``--reuse`` keeps the
  database and artifacts for the next run and builds only what is missing; at scale 1
  they are bench/lineage.py's own (``hcp_bench_lineage``, ~/.cache/hcp-bench-world), so
  either bench builds them for both. Before timing, the Merkle tree is brought to the
  head and a checkpoint signed (as the relay and the signer keep them in service). Each
  repeat waits for an idle machine, then runs both commands as a user does, fresh
  processes of `hcp` with the signing key set (so the audit checks signatures with the
  server's key); the figure is the median wall time, its ratio the median over the 60 s
  ceiling, and each command's peak memory is printed beside it. Each `audit all` appends
  its `audit.completed` event to the log, as always. At scale 1 `manifest_members` holds
  about 5.2M rows (a manifest's held-out side is every held-out reward of its specialist
  up to its cut, 2,500 on average); the check holds none of them (it compares a manifest
  at a time), so its memory does not grow with them.
* write path: see bench/projection_writes.py; per repeat, the median transaction of each
  side (the events appended and projected; the same kind of write with its projectors'
  rows applied directly, derived off the clock; the events appended alone), and the
  ratios projected / direct (the goal's) and projected / alone (the table's own row
  writes counted as projecting too); each figure is the median of per-repeat ratios.
* ingest (bench/ingest.py's path, POST /v1/events -> ``events.ingest.ingest`` ->
  ``store.append``): no projector runs there; the bench checks that no type a client
  may write is one a projection reads, and says so instead of timing nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import projection_writes as writes  # bench/, beside this script
from db_cpu import DatabaseCpu
from lineage import container, remove_tree, signing_key_file
from lineage_build import WORLD_DB, WORLD_DIR, Shape, build, built
from load import load_average, wait_for_idle
from scratch import named_database
from sqlalchemy.engine import make_url

from hcp.bootstrap import Container
from kernel.db import make_engine

ROOT = Path(__file__).resolve().parents[1]
CEILING_S = 60.0
WRITE_GOAL = 1.05
FULL = Shape(events=1_000_000, rewards=100_000, chains=40, length=51)


def main() -> None:
    args = parse_args()
    if args.only != "writes":
        rebuild_and_audit(args, scaled(args.scale))
    if args.only != "audit":
        write_path(args)
    ingest_path()


def scaled(scale: float) -> Shape:
    return Shape(round(FULL.events * scale), round(FULL.rewards * scale),
                 max(4, round(FULL.chains * scale)), max(5, round(FULL.length * scale)))


# --- rebuild --check and audit all ------------------------------------------------------

def rebuild_and_audit(args: argparse.Namespace, shape: Shape) -> None:
    suffix = "" if args.scale == 1 else f"_s{args.scale:g}".replace(".", "_")
    data_dir = Path(f"{args.data_dir}{suffix.replace('_', '-', 1)}" if args.reuse
                    else tempfile.mkdtemp(prefix="hcp-bench-projections-"))
    name = f"{args.db_name}{suffix}" if args.reuse else f"hcp_bench_{uuid.uuid4().hex[:8]}"
    with named_database(args.admin_url, name, keep=args.reuse) as (url, _):
        parts = container(url, data_dir)
        try:
            prepare(parts, shape, data_dir)
            env = command_env(url, data_dir)
            seconds: dict[str, list[float]] = defaultdict(list)
            answers: dict[str, dict[str, Any]] = {}
            memory: dict[str, float] = defaultdict(float)
            for r in range(args.repeats):
                idle = wait_for_idle(args.idle_wait)
                print(f"repeat {r + 1}/{args.repeats} (machine {idle:.0%} idle, {load_average()})",
                      flush=True)
                order = list(COMMANDS.items()) if r % 2 == 0 else list(reversed(COMMANDS.items()))
                for label, argv in order:
                    ran = hcp(argv, env)
                    answers[label] = ran.answer
                    seconds[label].append(ran.seconds)
                    memory[label] = max(memory[label], ran.megabytes)
                    print(f"            {label}: {ran.seconds:.1f} s ({ran.cpu_text()}), peak "
                          f"{ran.megabytes:,.0f} MB ({load_average()})", flush=True)
            report_commands(seconds, answers, memory)
        finally:
            parts.close()
            if not args.reuse:
                remove_tree(data_dir)


COMMANDS = {"hcp rebuild --check": ["rebuild", "--check"], "hcp audit all": ["audit", "all"]}


def prepare(parts: Container, shape: Shape, data_dir: Path) -> None:
    if not built(parts, shape):  # resumes a partial build (bench/world.py builds in pieces)
        print(f"building {shape} (once; --reuse keeps it) …", flush=True)
        build(parts, shape, data_dir, lambda line: print(f"  {line}", flush=True))
    started = time.perf_counter()
    parts.tree_builder.build()
    parts.checkpoint_signer.sign()
    print(f"tree at the head and a checkpoint signed: {time.perf_counter() - started:.1f} s "
          "(not part of the figures)", flush=True)
    print(f"data: {counts(parts)}", flush=True)


def counts(parts: Container) -> str:
    from sqlalchemy import text

    tables = ("events", "reward_records", "adapter_versions", "manifest_members", "adapter_ancestry")
    with parts.engine.connect() as conn:
        return ", ".join(f"{t} {conn.execute(text(f'SELECT count(*) FROM {t}')).scalar():,}"  # noqa: S608
                         for t in tables)


def command_env(url: str, data_dir: Path) -> dict[str, str]:
    """The server's configuration and nothing else of the caller's HCP_* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
    return {**env, "HCP_DATABASE_URL": url, "HCP_DATA_DIR": str(data_dir), "HCP_KAFKA_BOOTSTRAP": "",
            "HCP_REDIS_URL": "", "HCP_CHECKPOINT_KEY_FILE": str(signing_key_file(data_dir))}


@dataclass(frozen=True)
class Ran:
    """One `hcp … --json` run: wall seconds, its answer, peak memory, and the CPU seconds
    of the command and of PostgreSQL for its database (on shared cores, what it costs)."""

    seconds: float
    answer: dict[str, Any]
    megabytes: float
    cpu: float
    database_cpu: float

    def cpu_text(self) -> str:
        return f"CPU {self.cpu:.1f} s + PostgreSQL {self.database_cpu:.1f} s"


def hcp(argv: list[str], env: dict[str, str]) -> Ran:
    """One `hcp ... --json` in a fresh process, timed, with its CPU and its database's."""
    admin = make_engine(env["HCP_DATABASE_URL"]) if env["HCP_DATABASE_URL"].startswith("postgresql") else None
    try:
        if admin is None:
            return _hcp(argv, env, None)
        with DatabaseCpu(admin, make_url(env["HCP_DATABASE_URL"]).database or "") as cpu:
            ran = _hcp(argv, env, cpu)
        return Ran(ran.seconds, ran.answer, ran.megabytes, ran.cpu, cpu.seconds)
    finally:
        if admin is not None:
            admin.dispose()


def _hcp(argv: list[str], env: dict[str, str], cpu: DatabaseCpu | None) -> Ran:
    """Seconds of one `hcp ... --json` in a fresh process, its JSON answer and its peak
    memory in MB (the replay holds every projected row twice: it grows with the data)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen([sys.executable, "-m", "cli.main", *argv, "--json"], env=env, cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=errors)
        assert child.stdout is not None
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        took = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        if child.returncode not in (0, 1):  # 1: it ran and found differences (reported below)
            raise SystemExit(f"hcp {' '.join(argv)} exited {child.returncode}: "
                             f"{errors.read().decode(errors='replace')[-2000:]}")
    return Ran(took, json.loads(out), usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, 0.0)


def report_commands(seconds: dict[str, list[float]], answers: dict[str, dict[str, Any]],
                    memory: dict[str, float]) -> None:
    print(f"\n{'command':<22} {'median':>9} {'runs':<24} {'ceiling':>8} {'ratio':>6}  {'goal':<16} peak"
          f"  ({load_average()})")
    for label, runs in seconds.items():
        median = statistics.median(runs)
        shown = ", ".join(f"{s:.1f}" for s in runs)
        verdict = "met" if median < CEILING_S else "NOT MET"
        print(f"{label:<22} {median:>7.1f} s {shown:<24} {CEILING_S:>6.0f} s {median / CEILING_S:>6.2f}"
              f"  < {CEILING_S:.0f} s: {verdict:<7} {memory[label]:,.0f} MB")
    rebuilt = answers["hcp rebuild --check"]
    rows = sum(t["rows"] for t in rebuilt["tables"])
    wrong = sum(len(t["differences"]) for t in rebuilt["tables"])
    print(f"  rebuild --check: {len(rebuilt['tables'])} projections, {rows:,} rows, "
          + ("every row is what the log says" if rebuilt["ok"] else f"{wrong} difference(s)"))
    audited = answers["hcp audit all"]
    notes = [n for c in audited["checks"] for n in c["notes"]]
    signed = not any("signatures were not checked" in n for n in notes)
    print(f"  audit all: {len(audited['checks'])} checks, ok={audited['ok']}, {audited['mismatch_count']} "
          f"mismatch(es), checkpoint signatures {'checked' if signed else 'NOT checked'}; slowest checks: "
          + ", ".join(f"{c['check']} {c['seconds']:.1f} s"
                      for c in sorted(audited["checks"], key=lambda c: -c["seconds"])[:5]))
    for check in audited["checks"]:
        for mismatch in check["mismatches"][:3]:
            print(f"    [{check['check']}] {mismatch['subject']}: {mismatch['message'][:200]}")


# --- the write path ---------------------------------------------------------------------

def write_path(args: argparse.Namespace) -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="hcp-bench-projection-writes-"))
    with named_database(args.admin_url, f"hcp_bench_{uuid.uuid4().hex[:8]}", keep=False) as (url, _):
        parts = container(url, data_dir)
        try:
            print(f"\nwrite path: building a scratch world {writes.WORLD} …", flush=True)
            build(parts, writes.WORLD, data_dir, lambda line: None)
            planner = writes.Planner(parts)
            writes.warm_up(parts, planner)
            results: dict[str, list[dict[str, float]]] = defaultdict(list)
            for r in range(args.repeats):
                idle = wait_for_idle(args.idle_wait)
                for name, sides in writes.one_repeat(parts, planner, args.writes).items():
                    results[name].append(sides)
                print(f"repeat {r + 1}/{args.repeats} (machine {idle:.0%} idle at the start, "
                      f"{load_average()} at the end)", flush=True)
            report_writes(results, args)
        finally:
            parts.close()
            remove_tree(data_dir)


def report_writes(results: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    print(f"\nwrite path on PostgreSQL, one writer, {args.writes} transactions a side a repeat, "
          f"{args.repeats} repeats ({load_average()}); medians:")
    print(f"{'path':<28} {'projected':>10} {'direct':>9} {'ratio':>6}  {'goal':<16} {'with reads':>10} "
          f"{'ratio':>6} {'alone':>9} {'ratio':>6}")
    for name, repeats in results.items():
        def ms(side: str, repeats: list[dict[str, float]] = repeats) -> float:
            return statistics.median(r[side] for r in repeats) * 1e3

        def ratio(side: str, repeats: list[dict[str, float]] = repeats) -> float:
            return statistics.median(r[writes.PROJECTED] / r[side] for r in repeats)

        verdict = "met" if ratio(writes.DIRECT) <= WRITE_GOAL else "NOT MET"
        print(f"{name:<28} {ms(writes.PROJECTED):>7.2f} ms {ms(writes.DIRECT):>6.2f} ms "
              f"{ratio(writes.DIRECT):>6.3f}  <= {WRITE_GOAL}: {verdict:<7} {ms(writes.READS):>7.2f} ms "
              f"{ratio(writes.READS):>6.3f} {ms(writes.ALONE):>6.2f} ms {ratio(writes.ALONE):>6.3f}")
    print("  ratio: projected / direct (the same rows applied with the same statements, derived off the "
          "clock, the projector's reads of the tables included): the goal's. with reads: the same, the "
          "projector's reads on the clock (what any writer of those rows must read), so its ratio is "
          "the projector's own computing. alone: the events appended alone, which also counts the "
          "rows' own writes")


def ingest_path() -> None:
    from events.catalogue import CORE_TYPES, CUSTOM_PREFIX
    from hcp.projections import PROJECTIONS

    projected = {cls.TYPE for p in PROJECTIONS for cls in p.events}
    reachable = sorted(t for t in projected if t in CORE_TYPES or t.startswith(CUSTOM_PREFIX))
    if reachable:
        raise SystemExit(f"client types that projections read: {reachable}: time the ingest path too")
    print("\ningest (POST /v1/events, bench/ingest.py's path): no projector runs: ingest() appends "
          f"client events only, and none of the {len(projected)} types the projections read is one a "
          "client may write; nothing to time (its figures are bench/ingest.py's)")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="of the lineage data (1: 1M events); "
                   "below 0.1 the write path defaults to 20 transactions a side")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--writes", type=int, help="transactions a side, per path and repeat (default 100)")
    p.add_argument("--only", choices=("audit", "writes"),
                   help="only rebuild and audit, or only the write path")
    p.add_argument("--reuse", action="store_true", help="keep the database and artifacts for the next run")
    p.add_argument("--db-name", default=WORLD_DB, help="the database --reuse keeps")
    p.add_argument("--data-dir", default=str(WORLD_DIR),
                   help="with --reuse: where the artifacts and the base model are kept")
    p.add_argument("--idle-wait", type=float, default=120.0,
                   help="most seconds to wait for an idle machine before each repeat")
    p.add_argument("--admin-url", default=os.environ.get("HCP_TEST_POSTGRES_URL", ""))
    args = p.parse_args()
    if not args.admin_url:
        p.error("no PostgreSQL: set HCP_TEST_POSTGRES_URL (scripts/services.sh env) or --admin-url")
    if args.writes is None:
        args.writes = 20 if args.scale < 0.1 else 100
    return args


if __name__ == "__main__":
    main()
