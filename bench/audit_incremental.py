"""The incremental audit on the 1M-event world: `hcp audit all --since-checkpoint` after 10k
new events, against the 5 s goal.

    .venv/bin/python bench/audit_incremental.py [--events 10000] [--repeats 3] [--sample 100]

Needs PostgreSQL and the world of bench/world.py (built first if missing or partial). Each
repeat: sign a checkpoint (the base, as the signer keeps doing in service), append
``--events`` new events as clients do (sessions of 10 turns, a reward for every tenth
session, chained like the evaluators'), ``--registrations`` new adapter versions (each a
trigger firing, a frozen manifest, a run and its registration: about six server events),
and bring the Merkle tree to the head (as the relay does); then time `hcp audit all
--since-checkpoint --json` in a fresh process with the server's key, as an auditor runs it.
The figure is the median wall time over the repeats, its ratio the median over the 5 s
goal; the report's coverage (events re-hashed, rows compared, sample and seed) is printed.
Each repeat appends to the world, as a server would: the world grows by ``--events`` and
the audit's own event every repeat.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

from lineage import container  # bench/, beside this script
from lineage_build import build, built, parse_world_args, progress, register, reward, world_arguments
from load import load_average, wait_for_idle
from projections import command_env, counts, hcp
from scratch import named_database
from world import FULL

from events.model import EventMetadata, NewEvent
from hcp.bootstrap import Container

GOAL_S = 5.0
PER_SESSION = 10


def main() -> None:
    args = parse_args()
    with named_database(args.admin_url, args.db_name, keep=True) as (url, _):
        parts = container(url, args.data_dir)
        try:
            if not built(parts, FULL):
                print(f"building the world {FULL} (resumes) …", flush=True)
                build(parts, FULL, args.data_dir, lambda line: print(f"  {line}", flush=True))
            print(f"world: {counts(parts)}", flush=True)
            env = command_env(url, args.data_dir)
            runs = [one_repeat(parts, args, env, r) for r in range(args.repeats)]
            report([wall for wall, _ in runs], [cpu for _, cpu in runs], args)
        finally:
            parts.close()


def one_repeat(parts: Container, args: argparse.Namespace, env: dict[str, str],
               r: int) -> tuple[float, float]:
    signed = parts.checkpoint_signer.sign()
    assert signed is not None
    started = time.perf_counter()
    append_sessions(parts, args.events - 6 * args.registrations, uuid.uuid4().hex[:8])
    done = progress(parts, FULL).adapters
    for k in range(args.registrations):
        generation, chain = divmod(done + k, FULL.chains)
        register(parts, FULL, chain, generation, "bench-base")
    parts.tree_builder.build()
    added = parts.store.head() - signed.checkpoint.size
    print(f"repeat {r + 1}: checkpoint {signed.position} at {signed.checkpoint.size:,}; {added:,} events "
          f"appended in {time.perf_counter() - started:.1f} s (not timed)", flush=True)
    idle = wait_for_idle(args.idle_wait)
    ran = hcp(["audit", "all", "--since-checkpoint", "--sample", str(args.sample),
               "--sample-manifests", str(args.sample_manifests)], env)
    took, answer, megabytes = ran.seconds, ran.answer, ran.megabytes
    coverage = answer["coverage"]
    slow = ", ".join(f"{c['check']} {c['seconds']:.2f} s" for c in
                     sorted(answer["checks"], key=lambda c: -c["seconds"])[:4])
    print(f"  hcp audit all --since-checkpoint: {took:.2f} s ({ran.cpu_text()}), peak {megabytes:,.0f} MB, "
          f"ok={answer['ok']} "
          f"(machine {idle:.0%} idle at the start, {load_average()})\n"
          f"  re-hashed events {coverage['rehashed'][0]:,}..{coverage['rehashed'][1]:,}; sample "
          f"{coverage['sample']} per table and {coverage['sample_manifests']} manifests, seed "
          f"{coverage['seed']}; slowest checks: {slow}", flush=True)
    for mismatch in [m for c in answer["checks"] for m in c["mismatches"]][:5]:
        print(f"    MISMATCH {mismatch['subject']}: {mismatch['message'][:200]}")
    return took, ran.cpu + ran.database_cpu


def append_sessions(parts: Container, events: int, tag: str) -> None:
    """``events`` new client events in sessions of 10, a reward for every tenth session,
    a batch of sessions and its rewards in one transaction (as lineage_build writes them)."""
    hashes = {v: parts.contracts.get("default", v).content_hash for v in range(1, 6)}
    sessions = events // PER_SESSION
    for first in range(0, sessions, 500):
        batch = range(first, min(first + 500, sessions))
        with parts.engine.begin() as conn:
            appended = parts.store.append([e for s in batch for e in session(tag, s)], conn)
            made = [a.event for a in appended]
            rewards = [reward(FULL, FULL.sessions + s, made[(i + 1) * PER_SESSION - 2:(i + 1) * PER_SESSION],
                              hashes) for i, s in enumerate(batch) if s % 10 == 0]
            parts.rewards.record(rewards, conn)
    rest = events - sessions * PER_SESSION
    if rest:
        parts.store.append(session(tag, sessions)[:rest])


def session(tag: str, number: int) -> list[NewEvent]:
    meta = EventMetadata(tenant=f"tenant-{number % 50}", specialist="coding")
    return [NewEvent(f"bench-{tag}-{number:06d}", "turn.user" if i % 2 == 0 else "turn.assistant",
                     {"text": f"question {number}.{i}" if i % 2 == 0 else f"answer {number}.{i}"},
                     metadata=meta) for i in range(PER_SESSION)]


def report(seconds: list[float], cpu: list[float], args: argparse.Namespace) -> None:
    median = statistics.median(seconds)
    verdict = "met" if median < GOAL_S else "NOT MET"
    print(f"\nincremental audit of {args.events:,} new events on the 1M-event world: median {median:.2f} s "
          f"(runs {', '.join(f'{s:.2f}' for s in seconds)}), goal < {GOAL_S:g} s: {verdict}, ratio "
          f"{median / GOAL_S:.2f}; CPU (the command and PostgreSQL) median {statistics.median(cpu):.2f} s "
          f"({load_average()})")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=10_000, help="new events per repeat")
    p.add_argument("--registrations", type=int, default=1, help="new adapter versions per repeat")
    p.add_argument("--sample", type=int, default=100, help="older rows per table the audit samples")
    p.add_argument("--sample-manifests", type=int, default=2, help="older manifests the audit samples")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--idle-wait", type=float, default=60.0,
                   help="most seconds to wait for an idle machine before each timed run")
    world_arguments(p)
    return parse_world_args(p)


if __name__ == "__main__":
    main()
