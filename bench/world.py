"""The 1M-event world the scale benches share, built once, in pieces if need be.

    .venv/bin/python bench/world.py               # build what is missing (it resumes)
    .venv/bin/python bench/world.py --minutes 20  # stop after about 20 minutes; run again to go on
    .venv/bin/python bench/world.py --status      # what it holds; build nothing

The world is bench/lineage_build.py's shape at full scale: 1,000,000 events (100,000
sessions of 10), 100,000 reward records, 2,040 adapter versions in 40 chains of 51, kept in
the PostgreSQL database ``hcp_bench_lineage`` and, for its artifacts, the base model and
the checkpoint key, in ``--data-dir`` (default ~/.cache/hcp-bench-world, outside any
checkout). bench/lineage.py and bench/projections.py open it with ``--reuse`` (their
defaults name it), and build what is missing of it first. Every batch of sessions and
every registration commits on its own, so a build stopped anywhere goes on where it
stopped. The benches append to it as a
server would (audit runs, checkpoints, the incremental audit's new events): it grows, and
each bench prints what it holds when it starts.
"""

from __future__ import annotations

import argparse
import time

from lineage import container  # bench/, beside this script
from lineage_build import Shape, build, parse_world_args, progress, world_arguments
from load import load_average
from scratch import named_database

FULL = Shape(events=1_000_000, rewards=100_000, chains=40, length=51)


def main() -> None:
    args = parse_args()
    with named_database(args.admin_url, args.db_name, keep=True) as (url, _):
        parts = container(url, args.data_dir)
        try:
            done = progress(parts, FULL)
            print(f"{args.db_name}: {done.sessions:,} of {FULL.sessions:,} sessions, {done.adapters:,} of "
                  f"{FULL.adapters:,} adapter versions ({load_average()})", flush=True)
            if args.status or done.complete(FULL):
                return
            deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
            whole = build(parts, FULL, args.data_dir, lambda line: print(f"  {line}", flush=True), deadline)
            print("the world is whole" if whole else "not whole yet: run again to go on", flush=True)
        finally:
            parts.close()


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, help="stop after about this long (the build resumes)")
    p.add_argument("--status", action="store_true", help="say what the world holds; build nothing")
    world_arguments(p)
    return parse_world_args(p)


if __name__ == "__main__":
    main()
