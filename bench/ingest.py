"""Ingest benchmark: events/s through the HTTP API into PostgreSQL with the relay
publishing to Kafka, against the ceiling of COPYing the same rows into a bare table.

    .venv/bin/python bench/ingest.py [--events 40000] [--batch 200] [--clients 4]

Needs PostgreSQL and Kafka (scripts/services.sh up). It creates a throw-away database,
starts the API (uvicorn) and `hcp relay` as subprocesses, and prints:

* throughput: events/s end to end (first POST until the relay's checkpoint reaches the
  last position, i.e. every event committed *and* acknowledged by Kafka);
* ceiling: the same rows COPYed into a table with the same columns and nothing else
  (no keys, no triggers, no hashing), timed around the COPY alone; and the ratio;
* latency: p50/p99 of single-event POSTs sent at a steady rate while the relay runs.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
from scratch import fresh_database  # bench/scratch.py, beside this script
from sqlalchemy.engine import make_url

from access.keys import create_key
from events.checkpoints import Checkpoints
from events.relay import checkpoint_name
from kernel.db import make_engine

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ("position, event_id, stream_id, stream_seq, type, schema_version, payload, occurred_at, "
           "recorded_at, actor, tenant, specialist, adapter_version, contract, causation_id, "
           "correlation_id, payload_digest, prev_hash, hash")


def main() -> None:
    args = parse_args()
    with fresh_database(args.postgres) as url:
        engine = make_engine(url)
        key = create_key(engine, ["events:write"], "bench")
        prefix = f"bench{uuid.uuid4().hex[:6]}"
        env = {**os.environ, "HCP_DATABASE_URL": url, "HCP_KAFKA_BOOTSTRAP": args.kafka,
               "HCP_TOPIC_PREFIX": prefix}
        port = free_port()
        with process(api_command(port, args.api_workers), env), \
                process([sys.executable, "-m", "cli.main", "relay"], env):
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base)
            bodies = make_batches(args.events, args.batch, args.streams)
            caught_up = lambda n: Checkpoints(engine).load(checkpoint_name(f"{prefix}.events")) >= n  # noqa: E731
            seconds = post_all(base, key, bodies, args.clients, caught_up, args.events)
            rate = args.events / seconds
            ceiling = copy_ceiling(url)
            print(f"throughput: {args.events} events in batches of {args.batch} from "
                  f"{args.clients} clients: {seconds:.2f} s = {rate:,.0f} events/s "
                  "(committed and published to Kafka)")
            print(f"ceiling:    COPY of the same rows into a bare table: {ceiling:,.0f} rows/s")
            print(f"ratio:      {rate / ceiling:.3f} (goal >= 0.5)")
            p50, p99, sent = latency(base, key, args.rate, args.seconds)
            print(f"latency:    {sent} single-event POSTs at {args.rate}/s: "
                  f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
        engine.dispose()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"),
        help="an admin URL; the benchmark creates and drops its own database")
    parser.add_argument("--kafka", default=os.environ.get("HCP_TEST_KAFKA_BOOTSTRAP", "127.0.0.1:9092"))
    parser.add_argument("--events", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4, help="concurrent posting threads")
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--api-workers", type=int, default=1, help="uvicorn worker processes")
    parser.add_argument("--rate", type=float, default=50.0, help="single-event POSTs per second")
    parser.add_argument("--seconds", type=float, default=10.0)
    return parser.parse_args()


def api_command(port: int, workers: int) -> list[str]:
    return [sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory", "--host",
            "127.0.0.1", "--port", str(port), "--workers", str(workers), "--log-level", "warning",
            "--no-access-log"]


@contextmanager
def process(command: list[str], env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(base: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("the API did not come up")


def make_batches(events: int, batch: int, streams: int) -> list[bytes]:
    """Request bodies, built before the clock starts: ~300-byte realistic turns."""
    names = [f"session-{uuid.uuid4().hex[:12]}" for _ in range(streams)]
    text_ = "please refactor this function so that it streams rows instead of loading them " * 2
    items = [{"stream_id": names[i % streams], "type": "turn.user", "event_id": str(uuid.uuid4()),
              "payload": {"text": text_, "n": i},
              "metadata": {"actor": f"user-{i % 97}", "specialist": "coding"}}
             for i in range(events)]
    return [json.dumps({"events": items[i:i + batch]}).encode() for i in range(0, events, batch)]


def post_all(base: str, key: str, bodies: list[bytes], clients: int, caught_up, total: int) -> float:  # type: ignore[no-untyped-def]
    """Post every body from ``clients`` threads; time until the relay has published all."""
    queue = list(reversed(bodies))
    lock, errors = threading.Lock(), []
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def client() -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            while True:
                with lock:
                    if not queue:
                        return
                    body = queue.pop()
                response = http.post("/v1/events", content=body)
                if response.status_code != 201:
                    errors.append(response.text)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"{len(errors)} batches failed, first: {errors[0][:300]}")
    posted = time.perf_counter() - started
    while not caught_up(total):
        time.sleep(0.01)
    seconds = time.perf_counter() - started
    print(f"            (all POSTs answered after {posted:.2f} s, relay caught up "
          f"{seconds - posted:.2f} s later)")
    return seconds


def copy_ceiling(url: str) -> float:
    """Rows/s of COPYing the log's own rows into a bare table (same columns, nothing else)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        select = COLUMNS.replace("payload,", "payload::text,")  # as JSON text, like a client sends
        rows = conn.execute(f"SELECT {select} FROM events ORDER BY position").fetchall()
        conn.execute("CREATE TABLE bench_bare (LIKE events)")
        conn.commit()
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(f"COPY bench_bare ({COLUMNS}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        conn.commit()
        seconds = time.perf_counter() - started
    return len(rows) / seconds


def latency(base: str, key: str, rate: float, seconds: float) -> tuple[float, float, int]:
    """Open loop: one POST every 1/rate s (not waiting for slow answers to send the next)."""
    headers = {"Authorization": f"Bearer {key}"}
    samples: list[float] = []
    count = int(rate * seconds)

    def one(http: httpx.Client, i: int) -> None:
        body = {"events": [{"stream_id": f"latency-{i % 20}", "type": "turn.user",
                            "payload": {"text": f"turn {i}"}}]}
        started = time.perf_counter()
        response = http.post("/v1/events", json=body)
        samples.append(time.perf_counter() - started)
        assert response.status_code == 201, response.text

    with httpx.Client(base_url=base, headers=headers, timeout=30,
                      limits=httpx.Limits(max_connections=64)) as http:
        start = time.perf_counter()
        threads = []
        for i in range(count):
            time.sleep(max(0.0, start + i / rate - time.perf_counter()))
            t = threading.Thread(target=one, args=(http, i))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
    quantiles = statistics.quantiles(samples, n=100)
    return statistics.median(samples), quantiles[98], len(samples)


if __name__ == "__main__":
    main()
