"""How long `hcp` takes to start: help pages and read commands on an embedded database.

    .venv/bin/python bench/cli_startup.py [--repeats 7] [--checkout DIR]

Each repeat runs, back to back as fresh processes: the floor (`python -c "import typer"`,
what any typer command pays before it does anything; `python -c pass` is printed too),
then every command below. A command's figure is the median of its wall times; its ratio
is the median of the per-repeat ratios to the floor. The goals are absolute (help pages
under 0.3 s, a read command under 1 s); the ratio says how much of that is this
project's, and travels between machines better than the seconds do.

The read commands run against a fresh embedded database (SQLite under a temporary
HCP_DATA_DIR, every other HCP_* variable removed) holding one contract draft and one
signed checkpoint. ``--checkout DIR`` runs `python -m cli.main` from another checkout
instead of this environment's `hcp` (to compare with an earlier commit).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELP_GOAL_S, READ_GOAL_S = 0.3, 1.0
COMMANDS = [  # (what, argv, goal in seconds)
    ("hcp --help", ["--help"], HELP_GOAL_S),
    ("hcp contract --help", ["contract", "--help"], HELP_GOAL_S),
    ("hcp audit checkpoint --help", ["audit", "checkpoint", "--help"], HELP_GOAL_S),
    ("hcp contract list (embedded)", ["contract", "list"], READ_GOAL_S),
    ("hcp adapters list (embedded)", ["adapters", "list"], READ_GOAL_S),
    ("hcp keys list --json (embedded)", ["keys", "list", "--json"], READ_GOAL_S),
    ("hcp verify (embedded)", ["verify"], READ_GOAL_S),
]
CONTRACT = Path(__file__).resolve().parent.parent / "examples" / "contracts" / "harness.toml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--checkout", type=Path, help="Run `python -m cli.main` from this checkout")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hcp-cli-bench-") as data:
        env = embedded_env(Path(data), args.checkout)
        hcp = command(args.checkout)
        seed(hcp, env, Path(data))
        floors, passes, times = measure(hcp, env, args.repeats)
    report(floors, passes, times, args.repeats)


def embedded_env(data: Path, checkout: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
    env["HCP_DATA_DIR"] = str(data)
    env["HCP_CHECKPOINT_KEY_FILE"] = str(data / "checkpoint.key")
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout.resolve())
    return env


def command(checkout: Path | None) -> list[str]:
    script = Path(sys.executable).parent / "hcp"
    if checkout is None and script.exists():
        return [str(script)]  # what a user runs: the console script
    return [sys.executable, "-m", "cli.main"]


def seed(hcp: list[str], env: dict[str, str], data: Path) -> None:
    """A migrated database with a draft, a key and a signed checkpoint in its log."""
    for argv in (["db", "upgrade"],
                 ["audit", "keygen", "--origin", "bench.example/log", "--out", str(data / "checkpoint.key")],
                 ["contract", "new", "harness", "--file", str(CONTRACT)],
                 ["keys", "create", "--scope", "events:read", "--label", "bench"],
                 ["audit", "checkpoint", "create"]):
        subprocess.run([*hcp, *argv], env=env, cwd=data, check=True, capture_output=True, timeout=300)


def measure(hcp: list[str], env: dict[str, str],
            repeats: int) -> tuple[list[float], list[float], dict[str, list[float]]]:
    floors: list[float] = []
    passes: list[float] = []
    times: dict[str, list[float]] = {what: [] for what, _, _ in COMMANDS}
    for _ in range(repeats):
        passes.append(wall([sys.executable, "-c", "pass"], env))
        floors.append(wall([sys.executable, "-c", "import typer"], env))
        for what, argv, _ in COMMANDS:
            times[what].append(wall([*hcp, *argv], env))
    return floors, passes, times


def wall(argv: list[str], env: dict[str, str]) -> float:
    # From the data directory: `python -m` puts the working directory first on the path,
    # and this checkout's modules must not stand in for --checkout's.
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=env["HCP_DATA_DIR"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=300)
    return time.perf_counter() - started


def report(floors: list[float], passes: list[float], times: dict[str, list[float]],
           repeats: int) -> None:
    floor = statistics.median(floors)
    print(f"floor: python -c 'import typer' {floor * 1000:.0f} ms, python -c pass "
          f"{statistics.median(passes) * 1000:.0f} ms (medians of {repeats})")
    print(f"{'command':<34} {'median':>8} {'ratio to floor':>15}  goal")
    for what, _, goal in COMMANDS:
        median = statistics.median(times[what])
        ratio = statistics.median(t / f for t, f in zip(times[what], floors, strict=True))
        verdict = "met" if median < goal else "missed"
        print(f"{what:<34} {median * 1000:>6.0f} ms {ratio:>15.2f}  < {goal:g} s: {verdict}")


if __name__ == "__main__":
    main()
