"""Rebuild speed: events replayed per second by `hcp rebuild`, on PostgreSQL (the 1M-event
world) and SQLite (the same shape at ``--sqlite-scale``), against a ceiling of reading the
same events in the same pages.

    .venv/bin/python bench/rebuild_rate.py [--repeats 3] [--sqlite-scale 0.1]

What `hcp rebuild` runs (every projection, no --check: the log's server events replayed
through every projector inside one write transaction that holds the writers' locks,
compared, nothing written back on a healthy database), called in-process so that the
command's start (imports, settings) is not counted; the events it replays are those of the
types the projections read (``replay_types``), counted beside it. The
ceiling reads the very same events, in the same pages (``EventStore.scan_types``, 200 a
page) and as the same value objects, and does nothing with them. Goal: at least 20,000
events/s on PostgreSQL. Also printed: the rows the replay made (a manifest's members are
most of them) and the rate of a catch-up (``hcp rebuild --table T --catch-up``) of one
held projection from position 0 over a table that holds every row already, the position
set back afterwards.

The SQLite world is built once under the world's directory (bench/lineage_build.py,
resumable) and kept.
"""

from __future__ import annotations

import argparse
import statistics
import time

from lineage import container  # bench/, beside this script
from lineage_build import build, built, parse_world_args, world_arguments
from load import load_average, wait_for_idle
from projections import scaled
from scratch import named_database
from world import FULL

from events.checkpoints import Checkpoints
from events.projections.catchup import position_name
from events.projections.replay import replay_types
from hcp import migrate
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine

GOAL = 20_000.0
CATCH_UP_TABLE = "adapter_versions"


def main() -> None:
    args = parse_args()
    if args.only != "sqlite":
        postgres(args)
    if args.only != "postgres":
        sqlite(args)


def postgres(args: argparse.Namespace) -> None:
    with named_database(args.admin_url, args.db_name, keep=True) as (url, _):
        parts = container(url, args.data_dir)
        try:
            if not built(parts, FULL):
                build(parts, FULL, args.data_dir, lambda line: print(f"  {line}", flush=True))
            measure("PostgreSQL, the 1M-event world", parts, args)
        finally:
            parts.close()


def sqlite(args: argparse.Namespace) -> None:
    sqlite_dir = args.data_dir / f"sqlite-{args.sqlite_scale:g}"
    url = f"sqlite:///{sqlite_dir / 'hcp.db'}"
    sqlite_dir.mkdir(parents=True, exist_ok=True)
    migrate.upgrade(url)
    parts = Container(Settings(database_url=url, data_dir=sqlite_dir, kafka_bootstrap="", redis_url=""),
                      make_engine(url))
    try:
        shape = scaled(args.sqlite_scale)
        if not built(parts, shape):
            print(f"building the SQLite world {shape} (once; kept in {sqlite_dir}) …", flush=True)
            build(parts, shape, sqlite_dir, lambda line: print(f"  {line}", flush=True))
        measure(f"SQLite, the world at scale {args.sqlite_scale:g}", parts, args)
    finally:
        parts.close()


def measure(label: str, parts: Container, args: argparse.Namespace) -> None:
    types = replay_types(parts.rebuilder.projections)
    replayed, rebuilds, reads = 0, [], []
    for r in range(args.repeats):
        idle = wait_for_idle(args.idle_wait)
        order = ("rebuild", "read") if r % 2 == 0 else ("read", "rebuild")
        for side in order:
            if side == "rebuild":
                started = time.perf_counter()
                report = parts.rebuilder.rebuild()
                rebuilds.append(time.perf_counter() - started)
                assert report.ok and not any(r.inserted or r.updated or r.deleted for r in report.rebuilt), \
                    "the world is not what its log says"
            else:
                started = time.perf_counter()
                with parts.engine.connect() as conn:
                    replayed = sum(1 for _ in parts.store.scan_types(types, conn))
                reads.append(time.perf_counter() - started)
        print(f"  {label}, repeat {r + 1}: rebuild {rebuilds[-1]:.1f} s, read {reads[-1]:.2f} s "
              f"(machine {idle:.0%} idle at the start, {load_average()})", flush=True)
    rows = sum(c.rows for c in report.checks)
    ratios = [(replayed / b) / (replayed / c) for b, c in zip(rebuilds, reads, strict=True)]
    rate, ceiling = replayed / statistics.median(rebuilds), replayed / statistics.median(reads)
    verdict = f"goal >= {GOAL:,.0f}: {'met' if rate >= GOAL else 'NOT MET'}" if "PostgreSQL" in label else ""
    print(f"{label}: hcp rebuild replays {replayed:,} events ({rows:,} rows compared) in "
          f"{statistics.median(rebuilds):.1f} s: {rate:,.0f} events/s; reading them alone {ceiling:,.0f} "
          f"events/s; ratio {statistics.median(ratios):.3f} {verdict} ({load_average()})", flush=True)
    caught = parts.rebuilder.catch_up(CATCH_UP_TABLE, page=500)
    Checkpoints(parts.engine).save(position_name(CATCH_UP_TABLE), 0)  # as it was: no catch-up ran
    rate = caught.events / max(caught.seconds, 1e-9)
    print(f"  catch-up of {CATCH_UP_TABLE} from 0: {caught.events:,} events in {caught.seconds:.1f} s "
          f"({rate:,.0f} events/s; {caught.present:,} rows already there)", flush=True)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sqlite-scale", type=float, default=0.1)
    p.add_argument("--only", choices=("postgres", "sqlite"))
    p.add_argument("--idle-wait", type=float, default=60.0)
    world_arguments(p)
    return parse_world_args(p)


if __name__ == "__main__":
    main()
