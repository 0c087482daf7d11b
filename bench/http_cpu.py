"""Where the HTTP write path's time goes: CPU seconds per 1,000 events, per process, for
POST /v1/events (batches, --clients threads) against in-process ``ingest()`` on the same
batches, and how busy the machine was meanwhile.

    .venv/bin/python bench/http_cpu.py [--events 10000] [--batch 200] [--clients 4]

Per phase it reads /proc: the API process (``hcp serve``, all its threads), the
PostgreSQL backends connected to the phase's throw-away database, PostgreSQL's shared
processes (WAL writer, checkpointer, background writer: shared with anything else using
the server), this process (the HTTP clients' threads, or ``ingest()`` itself), and the
whole machine's busy and idle time. Nothing here is timed against a goal: it explains
the ratio bench/ingest.py prints. With ``HCP_PROBE=1`` in the API's environment
(bench/probe_serve.py) the API also reports its group commits when it stops.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

from ingest import single_summary
from load import bodies, free_port, make_items, post_all, post_timed, process, wait_healthy
from pacer import paced_processes
from scratch import database_with_key, fresh_database  # bench/scratch.py, beside this script
from sqlalchemy import text

from events.ingest import Author, ClientEvent, IngestLimits, ingest
from events.sql_store import SqlEventStore
from kernel.db import make_engine

TICK = os.sysconf("SC_CLK_TCK")
SHARED_PG = ("walwriter", "checkpointer", "background writer", "autovacuum", "logical replication")


def cpu_of(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads), seconds; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def switches_of(pid: int) -> float:
    """Context switches of all ``pid``'s threads so far (voluntary and not)."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/status") as f:
                total += sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
    except OSError:
        pass
    return float(total)


def machine() -> tuple[float, float]:
    """(busy, idle) seconds of all CPUs together."""
    with open("/proc/stat") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / TICK, idle / TICK


def shared_pg_pids() -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    cmd = f.read().decode(errors="replace")
            except OSError:
                continue
            if cmd.startswith("postgres:") and any(s in cmd for s in SHARED_PG):
                pids.append(int(name))
    return pids


class Meter:
    """CPU seconds of each group of processes between ``start`` and ``stop``."""

    def __init__(self, admin: Any, database: str, api_pid: int | None) -> None:
        self.admin, self.database, self.api_pid = admin, database, api_pid
        self.before: dict[str, float] = {}
        self.backends: dict[int, float] = {}

    def _backend_pids(self) -> list[int]:
        with self.admin.connect() as conn:
            return [int(r[0]) for r in conn.execute(
                text("SELECT pid FROM pg_stat_activity WHERE datname = :d"), {"d": self.database})]

    def snapshot(self) -> dict[str, float]:
        busy, idle = machine()
        return {"api": cpu_of(self.api_pid) if self.api_pid else 0.0,
                "api_switches": switches_of(self.api_pid) if self.api_pid else 0.0,
                "pg_shared": sum(cpu_of(p) for p in shared_pg_pids()),
                "bench": time.process_time(), "busy": busy, "idle": idle, "wall": time.perf_counter()}

    def start(self) -> None:
        self.backends = {pid: cpu_of(pid) for pid in self._backend_pids()}
        self.before = self.snapshot()

    def stop(self) -> dict[str, float]:
        after = self.snapshot()
        pids = set(self._backend_pids()) | set(self.backends)
        out = {k: after[k] - self.before[k] for k in after}
        out["pg_backends"] = sum(cpu_of(p) - self.backends.get(p, 0.0) for p in pids)
        return out


def report(name: str, events: int, used: dict[str, float]) -> None:
    per_k = 1000 / events
    wall = used["wall"]
    print(f"{name}: {events / wall:,.0f} events/s over {wall:.2f} s; CPU s per 1k events: "
          + ", ".join(f"{k} {used[k] * per_k:.3f}" for k in ("api", "pg_backends", "pg_shared", "bench"))
          + f"; API context switches per 1k events {used['api_switches'] * per_k:,.0f}"
          f"; machine busy {used['busy'] / wall:.2f} of 2 cores ({used['busy'] * per_k:.3f} s/1k), "
          f"idle {used['idle'] / wall:.2f}; load {os.getloadavg()[0]:.2f}", flush=True)


def in_process(args: argparse.Namespace, admin: Any) -> None:
    with fresh_database(args.postgres) as url:
        engine = make_engine(url)
        store, limits = SqlEventStore(engine), IngestLimits(500, 262_144)
        items = make_items(args.events + args.batch * 5, args.streams)
        client = [ClientEvent(stream_id=i["stream_id"], type=i["type"], payload=i["payload"],
                              event_id=uuid.UUID(i["event_id"]), **i["metadata"]) for i in items]
        warm, client = client[:args.batch * 5], client[args.batch * 5:]
        for start in range(0, len(warm), args.batch):
            ingest(store, warm[start:start + args.batch], limits, Author("key:bench"))
        meter = Meter(admin, url.rsplit("/", 1)[1].split("?")[0], None)
        meter.start()
        for start in range(0, len(client), args.batch):
            ingest(store, client[start:start + args.batch], limits, Author("key:bench"))
        report("in-process ingest()", len(client), meter.stop())
        engine.dispose()


def over_http(args: argparse.Namespace, admin: Any) -> None:
    with database_with_key(args.postgres) as (url, key):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "HCP_DATABASE_URL": url}
        command = [sys.executable, os.path.join(os.path.dirname(__file__), "probe_serve.py"),
                   "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--no-access-log"]
        with process(command, env) as api:
            wait_healthy(base)
            post_all(base, key, bodies(make_items(args.batch * 5, args.streams, "w"), args.batch),
                     args.clients)
            payloads = bodies(make_items(args.events, args.streams), args.batch)
            meter = Meter(admin, url.rsplit("/", 1)[1].split("?")[0], api.pid)
            api.send_signal(signal.SIGUSR1)  # the probe forgets the warm-up
            spy = profiler(args.profile, api.pid)
            post_timed(base, key, payloads, args.clients, ready=meter.start)
            used = meter.stop()
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its file and exits
                spy.wait(30)
            report(f"HTTP, {args.clients} clients", args.events, used)


def profiler(out: str | None, pid: int) -> subprocess.Popen[bytes] | None:
    """py-spy sampling the GIL holder of ``pid`` (collapsed stacks into ``out``), or
    nothing; started after the warm-up, so it sees only the measured requests."""
    if out is None:
        time.sleep(0.1)
        return None
    spy = subprocess.Popen(["py-spy", "record", "--gil", "-r", "200", "--format", "raw",
                            "-o", out, "-p", str(pid)], stdout=subprocess.DEVNULL)
    time.sleep(1.0)  # it attaches
    return spy


def latency(args: argparse.Namespace, admin: Any) -> None:
    """Single-event POSTs at --rate/s from two pacer processes with the relay running,
    as bench/ingest.py's latency phase (no batch load beside them)."""
    with database_with_key(args.postgres) as (url, key):
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, "HCP_DATABASE_URL": url, "HCP_KAFKA_BOOTSTRAP": args.kafka,
               "HCP_TOPIC_PREFIX": f"bench{uuid.uuid4().hex[:6]}"}
        command = [sys.executable, os.path.join(os.path.dirname(__file__), "probe_serve.py"),
                   "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--no-access-log"]
        with process(command, env) as api:
            wait_healthy(base)
            with process([sys.executable, "-m", "cli.main", "relay"], env):
                time.sleep(2)
                singles = bodies(make_items(int(args.rate * args.seconds), 20, "l"), 1)
                meter = Meter(admin, url.rsplit("/", 1)[1].split("?")[0], api.pid)
                api.send_signal(signal.SIGUSR1)
                spy = profiler(args.profile, api.pid)
                meter.start()
                single = paced_processes(base, key, singles, args.rate, 2)
                used = meter.stop()
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(30)
        print(f"single POSTs at {args.rate:.0f}/s: {single_summary(single)}")
        report("single POSTs", len(singles), used)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"))
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--only", choices=("http", "ingest", "latency"))
    parser.add_argument("--kafka", default=os.environ.get("HCP_TEST_KAFKA_BOOTSTRAP", "127.0.0.1:9092"))
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--profile", help="py-spy's collapsed stacks of the API during the HTTP phase")
    args = parser.parse_args()
    admin = make_engine(args.postgres, isolation_level="AUTOCOMMIT")
    if args.only == "latency":
        latency(args, admin)
    if args.only in (None, "ingest"):
        in_process(args, admin)
    if args.only in (None, "http"):
        over_http(args, admin)
    admin.dispose()


if __name__ == "__main__":
    main()
