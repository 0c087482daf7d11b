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

from evaluate import (  # bench/evaluate.py, beside this script
    JSON_COLUMNS,
    Column,
    MetaData,
    RewardQuery,
    Table,
    database,
    insert_rows,
    publish,
    replace,
    reward_id_for,
    reward_records,
    to_row,
    warm_up,
    write_events,
)

from evaluators.reevaluation import Reevaluations
from evaluators.rewards import RewardStore
from events.feed import DatabaseLogReader
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.collector import settle_garbage_collector
from kernel.db import make_engine


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
        engine = make_engine(url)
        container = Container(Settings(database_url=url, kafka_bootstrap=""), engine)
        rewards = RewardStore(engine)
        publish(container, 1)
        jobs = Reevaluations(engine, container.store, container.contracts, rewards)
        jobs.run(jobs.start("bench", 1).job_id)
        write_events(container, args.events)
        warm_up(container)
        worker = container.evaluator("bench", reader=DatabaseLogReader(engine, container.store, "bench"))
        settle_garbage_collector()
        if args.side == "evaluator":
            with counting():
                worker.drain(timeout=3600)
        else:
            totals = worker.drain(timeout=3600)
            template = rewards.find(RewardQuery(limit=1))[0]
            rows = [to_row(replace(template, position=i + 1, reward_id=reward_id_for(str(i), "c", 1)))
                    for i in range(totals.rewards)]
            columns = (Column(c.name, c.type) for c in reward_records.columns)
            bare = Table("bare_rewards", MetaData(), *columns)
            bare.create(engine)
            with counting():
                sum(1 for _ in container.store.iter_all())
                with engine.begin() as conn:
                    insert_rows(conn, bare, rows, JSON_COLUMNS)
        worker.saves.close()
        engine.dispose()


class counting:  # noqa: N801 (a context manager used like a function)
    """callgrind counts this process's instructions only inside the block."""

    def __enter__(self) -> None:
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True)

    def __exit__(self, *exc: object) -> None:
        subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True)


if __name__ == "__main__":
    main()
