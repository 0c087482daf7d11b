"""Ingest benchmark: every figure of the write path beside the peer a user would otherwise
pick, measured in the same run, with their ratio.

    .venv/bin/python bench/ingest.py [--events 30000] [--repeats 3] [--producer confluent-kafka]
    .venv/bin/python bench/ingest.py --only http [--api-workers 1,2,4]   # API processes

Needs PostgreSQL and Kafka (scripts/services.sh up). Each repeat waits for the machine to
be idle (at most --idle-wait s), creates throw-away databases and topics, and measures:

* end to end: HTTP batches -> PostgreSQL -> relay -> Kafka, until the relay's checkpoint
  (moved only after every ack) covers the last event; peer: pyeventsourcing's Application
  saving the same events in-process into PostgreSQL, same batch size. So this compares a
  pipeline of several processes (the API, the relay and its tree builder) that also does
  HTTP, the hash chain and Kafka, with a library called from one thread of this process
  that does none of them;
* store append: SqlEventStore.append in batches of --append-batch; peer: pyeventsourcing's
  PostgreSQL recorder (insert_events) on the same events (and its Application);
* HTTP: POST /v1/events from --clients threads, relay not running; peer: ingest()
  in-process on the same batches;
* relay drain: the relay publishing the HTTP phase's backlog; peers: bare confluent-kafka
  and kafka-python producers sending the same messages;
* single-event POST p99 at --rate/s with the relay running (goal < 15 ms), sent open loop
  by --load-procs processes of their own (bench/pacer.py); from the actual send and from
  the scheduled send (coordinated-omission-correct), with the generator's own lag;
* commit -> Kafka-visible p99 while ingesting at 80% of this repeat's end-to-end rate
  (goal < 250 ms): from the event's recorded_at to the broker's append time of its
  message (the topic uses LogAppendTime); what a consumer in this process saw is printed
  beside it (that adds the consumer's fetch cadence and this process's busy GIL);

plus COPY of the log's rows into a bare table: the physical ceiling, for reference.
Figures are medians over repeats; ratios are medians of the per-repeat ratios.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections import defaultdict
from typing import Any

import peers
from cpu_account import CpuAccount, children, find_process
from load import (
    KafkaWatcher,
    bodies,
    create_timed_topic,
    free_port,
    load_average,
    make_items,
    post_all,
    post_timed,
    process,
    quantile,
    wait_for_idle,
    wait_healthy,
    wait_until,
)
from pacer import Paced, paced_processes
from scratch import database_with_key, fresh_database  # bench/scratch.py, beside this script
from sqlalchemy import text

from access.keys import create_key
from events.checkpoints import Checkpoints
from events.ingest import Author, ClientEvent, IngestLimits, ingest
from events.kafka_io import ensure_topics
from events.model import EventMetadata, NewEvent
from events.relay import checkpoint_name
from events.sql_store import SqlEventStore
from kernel.db import make_engine

Results = dict[str, list[float]]
LAG_KEPT_UP_MS = 2.0  # the generator's own lateness at p99 under which it kept its schedule
ROWS: list[tuple[str, str, str, str, str]] = [  # label, ours, peer, unit, goal
    ("end to end (HTTP->PG->relay->Kafka)*", "e2e", "es_app", "events/s", ">= 1.0"),
    ("store append", "append", "es_recorder", "events/s", ">= 0.8"),
    ("store append vs es Application", "append", "es_app_append", "events/s", ""),
    ("HTTP POST batches*", "http", "ingest", "events/s", ">= 0.85"),
    ("relay drain vs bare confluent-kafka", "drain", "bare_confluent", "msg/s", ""),
    ("relay drain vs bare kafka-python", "drain", "bare_kafka_python", "msg/s", ""),
    ("end to end vs COPY ceiling", "e2e", "copy", "events/s", ""),
]


def main() -> None:
    args = parse_args()
    results: Results = defaultdict(list)
    for r in range(args.repeats):
        idle = wait_for_idle(args.idle_wait)
        print(f"repeat {r + 1}/{args.repeats} (machine {idle:.0%} idle, {load_average()})", flush=True)
        if args.only == "http":
            for workers in args.api_workers:
                results[f"http_{workers}"].append(http_only(args, workers))
            results["ingest"].append(in_process(args, ingest_rate, args.batch))
            continue
        sides: tuple[Any, ...] = (served, in_process_peers) if r % 2 == 0 else (in_process_peers, served)
        if args.only == "store":
            sides = (in_process_peers,)
        for side in sides:
            for name, value in side(args).items():
                results[name].append(value)
        print("            " + ", ".join(f"{k} {v[-1]:,.4g}" for k, v in sorted(results.items()))
              + f" ({load_average()} at the end)", flush=True)
    report(args, results)


def served(args: argparse.Namespace) -> dict[str, float]:
    """The API and the relay as processes: HTTP, relay drain, end to end, latencies."""
    out: dict[str, float] = {}
    with fresh_database(args.postgres) as url:
        engine = make_engine(url)
        key = create_key(engine, ["events:write"], "bench")
        prefix = f"bench{uuid.uuid4().hex[:6]}"
        topic = f"{prefix}.events"
        create_timed_topic(args.kafka, topic)  # the broker stamps when each message landed
        env = {**os.environ, "HCP_DATABASE_URL": url, "HCP_KAFKA_BOOTSTRAP": args.kafka,
               "HCP_TOPIC_PREFIX": prefix, "HCP_KAFKA_PRODUCER": args.producer}
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        checkpoint = checkpoint_reader(engine, topic)
        with process(api_command(port, args.api_workers[0]), env) as api:
            wait_healthy(base)
            out["http"] = args.events / post_all(base, key, bodies(make_items(
                args.events, args.streams, "h"), args.batch), args.clients)
            relay = [sys.executable, "-m", "cli.main", "relay"]  # `hcp relay`, as deployed
            with process(relay, env) as relay_process:
                began = wait_until(lambda: checkpoint() > 0, 60, "the relay's first page")
                first = checkpoint()
                # Polled every 20 ms, not 5: each poll is a query the measured relay and
                # database share the two cores with; 20 ms is under 1% of these phases.
                done = wait_until(lambda: checkpoint() >= args.events, 300, "the relay to drain",
                                  poll=0.02)
                out["drain"] = (args.events - first) / (done - began)
                e2e_bodies = bodies(make_items(args.events, args.streams, "e"), args.batch)
                cpu = cpu_account(engine, api.pid, relay_process.pid)
                tree_at_start = tree_size(engine)
                # The meter starts once the clients are built, as the clock does.
                started, _ = post_timed(base, key, e2e_bodies, args.clients, ready=cpu.start)
                done = wait_until(lambda: checkpoint() >= 2 * args.events, 300, "end to end", poll=0.02)
                cpu.stop()
                out["e2e"] = args.events / (done - started)
                print("            end to end: " + cpu.report(args.events, done - started)
                      + f"\n            (the relay's Merkle tree builder had {tree_at_start:,} of the "
                      f"{args.events:,} earlier events in the tree when end to end began, "
                      f"{tree_size(engine):,} of {2 * args.events:,} when it ended)", flush=True)
                out.update(latencies(args, base, key, topic, out["e2e"]))
        out["copy"] = peers.copy_ceiling(url)
        messages = peers.published_messages(url)[: args.events]
        engine.dispose()
    bare_topic = f"benchbare{uuid.uuid4().hex[:6]}"
    ensure_topics(args.kafka, [bare_topic])
    out["bare_confluent"] = peers.bare_confluent(args.kafka, bare_topic, messages)
    out["bare_kafka_python"] = peers.bare_kafka_python(args.kafka, bare_topic, messages)
    return out


def tree_size(engine: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT coalesce(max(idx) + 1, 0) FROM merkle_nodes "
                                     "WHERE level = 0")).scalar())


def cpu_account(engine: Any, api: int, relay: int) -> CpuAccount:
    """Who spends the CPU during end to end (reported beside the figure, not part of it)."""
    roles = {"bench": os.getpid(), "API": api, "relay": relay}
    for pid in children(relay):  # the Merkle tree builder
        roles[f"relay's child {pid} (tree builder)"] = pid
    return CpuAccount(engine, roles, kafka=find_process("kafka.Kafka"))


def latencies(args: argparse.Namespace, base: str, key: str, topic: str,
              e2e_rate: float) -> dict[str, float]:
    singles = bodies(make_items(int(args.rate * args.seconds), 20, "l"), 1)
    single = paced_processes(base, key, singles, args.rate, args.load_procs)
    watcher = KafkaWatcher(args.kafka, topic)
    try:
        time.sleep(1.0)  # let the watcher's assignment settle at the end offsets
        load_rate = 0.8 * e2e_rate
        items = make_items(int(load_rate * args.seconds), args.streams, "v")
        # From processes of their own too: sent from this process, beside the watcher, the
        # batches fell behind their schedule and arrived in bursts.
        load = paced_processes(base, key, bodies(items, args.batch), load_rate / args.batch,
                               args.load_procs)
        wait_until(lambda: len(watcher.delays) >= len(items), 60, "the watcher to see every event",
                   poll=0.05)
    finally:
        watcher.close()
    appended, seen = watcher.appended, watcher.delays
    print(f"            ({load_average()})\n            single POSTs at {args.rate:.0f}/s: "
          f"{single_summary(single)}\n            commit->Kafka at {load_rate:,.0f} events/s: "
          f"p50 {statistics.median(appended) * 1e3:.0f} ms p99 {quantile(appended, 0.99) * 1e3:.0f} ms "
          f"(seen by the watcher: p50 {statistics.median(seen) * 1e3:.0f} ms "
          f"p99 {quantile(seen, 0.99) * 1e3:.0f} ms; batches sent with generator lag p99 "
          f"{quantile(load.lag, 0.99) * 1e3:.1f} ms)", flush=True)
    return {"post_p99_ms": quantile(single.actual, 0.99) * 1e3,
            "post_sched_p99_ms": quantile(single.scheduled, 0.99) * 1e3,
            "post_lag_p99_ms": quantile(single.lag, 0.99) * 1e3,
            "visible_p99_ms": quantile(appended, 0.99) * 1e3, "seen_p99_ms": quantile(seen, 0.99) * 1e3}


def single_summary(single: Paced) -> str:
    ms = {name: [s * 1e3 for s in getattr(single, name)] for name in ("actual", "scheduled", "lag")}
    return (f"from the actual send p50 {statistics.median(ms['actual']):.1f} ms "
            f"p99 {quantile(ms['actual'], 0.99):.1f} ms; from the schedule p50 "
            f"{statistics.median(ms['scheduled']):.1f} ms p99 {quantile(ms['scheduled'], 0.99):.1f} ms; "
            f"generator lag p99 {quantile(ms['lag'], 0.99):.1f} ms, waited for a free connection "
            f"on {sum(q > 0.001 for q in single.queued)} of {len(single.queued)}")


def in_process_peers(args: argparse.Namespace) -> dict[str, float]:
    items = make_items(args.events, args.streams, "p")
    return {
        "ingest": in_process(args, ingest_rate, args.batch, items),
        "append": in_process(args, append_rate, args.append_batch, items),
        "es_recorder": in_process(args, peers.eventsourcing_recorder, args.append_batch, items),
        "es_app_append": in_process(args, peers.eventsourcing_application, args.append_batch, items),
        "es_app": in_process(args, peers.eventsourcing_application, args.batch, items),
    }


def in_process(args: argparse.Namespace, measure: Any, batch: int,
               items: list[dict[str, Any]] | None = None) -> float:
    with fresh_database(args.postgres) as url:
        return float(measure(url, items or make_items(args.events, args.streams), batch))


def ingest_rate(url: str, items: list[dict[str, Any]], batch: int) -> float:
    """ingest() as the route calls it, on ClientEvents built before the clock starts."""
    engine = make_engine(url)
    store, limits = SqlEventStore(engine), IngestLimits(500, 262_144)
    client = [ClientEvent(stream_id=i["stream_id"], type=i["type"], payload=i["payload"],
                          event_id=uuid.UUID(i["event_id"]), **i["metadata"]) for i in items]
    started = time.perf_counter()
    for start in range(0, len(client), batch):
        ingest(store, client[start:start + batch], limits, Author("key:bench"))
    seconds = time.perf_counter() - started
    engine.dispose()
    return len(items) / seconds


def append_rate(url: str, items: list[dict[str, Any]], batch: int) -> float:
    """SqlEventStore.append on NewEvents built before the clock starts."""
    engine = make_engine(url)
    store = SqlEventStore(engine)
    new = [NewEvent(i["stream_id"], i["type"], i["payload"], event_id=uuid.UUID(i["event_id"]),
                    metadata=EventMetadata(**i["metadata"])) for i in items]
    started = time.perf_counter()
    for start in range(0, len(new), batch):
        store.append(new[start:start + batch])
    seconds = time.perf_counter() - started
    engine.dispose()
    return len(items) / seconds


def http_only(args: argparse.Namespace, workers: int) -> float:
    with database_with_key(args.postgres) as (url, key):
        port = free_port()
        with process(api_command(port, workers), {**os.environ, "HCP_DATABASE_URL": url}):
            wait_healthy(f"http://127.0.0.1:{port}")
            payloads = bodies(make_items(args.events, args.streams), args.batch)
            rate = args.events / post_all(f"http://127.0.0.1:{port}", key, payloads, args.clients)
    print(f"            HTTP with {workers} API process(es): {rate:,.0f} events/s", flush=True)
    return rate


def checkpoint_reader(engine: Any, topic: str) -> Any:
    checkpoints, name = Checkpoints(engine), checkpoint_name(topic)
    return lambda: checkpoints.load(name)


def api_command(port: int, workers: int) -> list[str]:
    """`hcp serve` as deployed, with ``workers`` API processes (no access log)."""
    return [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--workers", str(workers), "--no-access-log"]


def report(args: argparse.Namespace, results: Results) -> None:
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"\n{args.events:,} events, batches of {args.batch} ({args.append_batch} for the store), "
          f"{args.clients} clients, relay producer {args.producer}, {args.repeats} repeats, "
          f"{load_average()} at the end")
    if args.only != "http":  # the HTTP, end-to-end and latency rows ran with this many
        print(f"* with {args.api_workers[0]} API process(es) (`hcp serve --workers "
              f"{args.api_workers[0]}`), as are the latencies")
    if args.only == "http":
        for workers in args.api_workers:
            ratios = [a / b for a, b in zip(results[f"http_{workers}"], results["ingest"], strict=True)]
            print(f"HTTP, {workers} API process(es): {med[f'http_{workers}']:,.0f} events/s, "
                  f"in-process ingest() {med['ingest']:,.0f}, ratio {statistics.median(ratios):.2f}")
        return
    print(f"{'path':<38} {'ours':>10} {'peer':>10} {'ratio':>7}  goal")
    for label, ours, peer, unit, goal in ROWS:
        if ours not in results or peer not in results:
            continue
        ratios = [a / b for a, b in zip(results[ours], results[peer], strict=True)]
        print(f"{label:<38} {med[ours]:>10,.0f} {med[peer]:>10,.0f} {statistics.median(ratios):>7.3f}"
              f"  {goal} ({unit})")
    if args.only == "store":
        return
    kept_up = med["post_lag_p99_ms"] <= LAG_KEPT_UP_MS
    print(f"single-event POST p99 at {args.rate:.0f}/s: {med['post_p99_ms']:.1f} ms from the actual "
          f"send, {med['post_sched_p99_ms']:.1f} ms from the schedule (goal < 15 ms); the "
          f"generator's lag p99 {med['post_lag_p99_ms']:.1f} ms: "
          + ("it kept up, so the actual-send figure stands" if kept_up else
             "it did NOT keep up, so quote the figure from the schedule"))
    print(f"commit -> Kafka-visible p99 at 80% of end to end: {med['visible_p99_ms']:.0f} ms "
          f"by the broker's append time (goal < 250 ms); seen by the watcher {med['seen_p99_ms']:.0f} ms")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"),
        help="an admin URL; the benchmark creates and drops its own databases")
    parser.add_argument("--kafka", default=os.environ.get("HCP_TEST_KAFKA_BOOTSTRAP", "127.0.0.1:9092"))
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--batch", type=int, default=200, help="events per POST")
    parser.add_argument("--append-batch", type=int, default=100, help="events per store append")
    parser.add_argument("--clients", type=int, default=4, help="concurrent posting threads")
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--api-workers", type=lambda s: [int(x) for x in s.split(",")],
                        help="uvicorn worker processes (default 1); a list with --only http "
                             "(default: 1 and one per core)")
    parser.add_argument("--producer", default="confluent-kafka", choices=("confluent-kafka", "kafka-python"))
    parser.add_argument("--rate", type=float, default=200.0, help="single-event POSTs per second")
    parser.add_argument("--load-procs", type=int, default=2,
                        help="processes generating the single-POST load (bench/pacer.py)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each latency phase")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle-wait", type=float, default=120.0,
                        help="most seconds to wait for an idle machine before each repeat")
    parser.add_argument("--only", choices=("http", "store"),
                        help="only the HTTP rows (API scaling), or only the in-process rows")
    args = parser.parse_args()
    if args.api_workers is None:
        cores = os.cpu_count() or 1
        args.api_workers = [1, cores] if args.only == "http" and cores > 1 else [1]
    return args


if __name__ == "__main__":
    main()
