"""The evaluator's drain against its read + COPY ceiling in instructions (valgrind's
callgrind), not seconds: a steady stand-in for bench/evaluate.py's ratio on a machine
whose speed moves by 15% between runs. Two runs under valgrind, one timing each side,
on the same log built the same way (bench/evaluate.py's conversations and contract).

    .venv/bin/python bench/evaluate_instructions.py [--events 5000]

Needs PostgreSQL (scripts/services.sh up) and valgrind (Debian `valgrind`). Counts only
this Python process's instructions (PostgreSQL's work is not in them) from the first poll
until every subject is committed, and for the ceiling its read and COPY; about a minute
per side at 5,000 events. Between two runs of one commit the counts agree within 0.3%.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from evaluate import bench_log, ceiling_rows, ceiling_work, database  # beside this script

from events.feed import DatabaseLogReader
from kernel.collector import settle_garbage_collector


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"))
    parser.add_argument("--side", choices=("evaluator", "ceiling"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side is not None:
        measure(args)
        return
    counts = {side: under_callgrind(side, args) for side in ("evaluator", "ceiling")}
    print(f"evaluator: {counts['evaluator'] / 1e9:.3f} G instructions; ceiling (read + COPY): "
          f"{counts['ceiling'] / 1e9:.3f} G; ratio {counts['ceiling'] / counts['evaluator']:.3f} "
          f"({args.events:,} events)")


def under_callgrind(side: str, args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                        f"--callgrind-out-file={out}", sys.executable, __file__, "--side", side,
                        "--events", str(args.events), "--postgres", args.postgres],
                       check=True, env=env, capture_output=True)
        totals = [line for line in out.read_text().splitlines() if line.startswith("totals:")]
        return int(totals[0].split()[1])


def measure(args: argparse.Namespace) -> None:
    with database(argparse.Namespace(postgres=args.postgres, sqlite=False)) as url:
        container, rewards, _ = bench_log(url, args.events)
        worker = container.evaluator("bench", reader=DatabaseLogReader(container.engine, container.store,
                                                                       "bench"))
        settle_garbage_collector()
        if args.side == "evaluator":
            with counting():
                worker.drain(timeout=3600)
        else:
            bare, rows = ceiling_rows(container, rewards, worker.drain(timeout=3600).rewards)
            with counting():
                ceiling_work(container, bare, rows)
        worker.saves.close()
        container.engine.dispose()


class counting:  # noqa: N801 (a context manager used like a function)
    """callgrind counts this process's instructions only inside the block."""

    def __enter__(self) -> None:
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True)


if __name__ == "__main__":
    main()
