"""OTLP ingest benchmark: GenAI spans/s through POST /v1/traces against POST /v1/events
carrying the very same events, one server, the same run.

    .venv/bin/python bench/otlp.py [--spans 20000] [--per-request 50] [--clients 4] [--repeats 3]
                                   [--encoding protobuf|json] [--gzip]

Needs PostgreSQL (scripts/services.sh up). Each repeat waits for the machine to be idle,
creates a throw-away database with an ``events:write`` key, starts `hcp serve` (one API
process, --no-run-workers: ingest alone, as bench/ingest.py's HTTP row), and runs both
sides back to back, in alternating order:

* OTLP: ``--spans`` chat spans as an instrumented OpenAI client exports them (the current
  GenAI conventions, content on the span: ``gen_ai.input.messages`` /
  ``gen_ai.output.messages``, model, response id, token usage), ``--per-request`` spans per
  ``ExportTraceServiceRequest``, posted by ``--clients`` threads. Each span becomes four
  events (session.started, turn.user, turn.assistant, episode.completed);
* POST /v1/events: as many other spans, mapped to events by the server's own mapping
  (``integrations.otlp.mapping``) before the clock starts, posted as JSON batches of the
  same events (four per span, ``--per-request`` spans' worth per batch).

Every body is built before its clock starts; a side's time runs from its first send to
its last answer, and the events each side stored are counted in the database after it.
The figure is OTLP spans/s; the peer is POST /v1/events in spans/s of the same content
(events/s / 4); the ratio is the median of the per-repeat ratios. Langfuse states
"hundreds of events per second" for its v3 ingestion; the goal here is thousands of
spans/s, at a ratio near 1 (OTLP's decoding and mapping cost little beside the write).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import queue
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from google.protobuf import json_format
from load import free_port, load_average, process, wait_for_idle, wait_healthy
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from scratch import fresh_database  # bench/scratch.py, beside this script

from access.keys import create_key
from events.sql_store import SqlEventStore
from integrations.otlp.decode import decode
from integrations.otlp.mapping import map_spans
from kernel.db import make_engine

QUESTION = "please refactor this function so that it streams rows instead of loading them"
ANSWER = "Iterate over the cursor and yield each row; never call fetchall on a large result."
EVENTS_PER_SPAN = 4


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=str(value)))


def chat_span(n: int) -> Span:
    """One chat call as opentelemetry-instrumentation-openai-v2 records it (a root span)."""
    start = time.time_ns() - 2_000_000_000 + n
    attributes = {
        "gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "chat",
        "gen_ai.response.model": "chat@3", "gen_ai.response.id": f"chatcmpl-{secrets.token_hex(12)}",
        "gen_ai.usage.input_tokens": 31, "gen_ai.usage.output_tokens": 19,
        "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
            {"type": "text", "content": f"{QUESTION} ({n})"}]}]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop", "parts": [
            {"type": "text", "content": ANSWER}]}]),
    }
    return Span(trace_id=secrets.token_bytes(16), span_id=secrets.token_bytes(8), name="chat chat",
                kind=Span.SPAN_KIND_CLIENT, start_time_unix_nano=start,
                end_time_unix_nano=start + 350_000_000,
                attributes=[_kv(k, v) for k, v in attributes.items()])


def export_request(spans: list[Span]) -> ExportTraceServiceRequest:
    resource = ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])
    resource.resource.attributes.append(_kv("service.name", "bench-app"))
    return ExportTraceServiceRequest(resource_spans=[resource])


def spans_from(start: int, args: argparse.Namespace) -> list[Span]:
    return [chat_span(n) for n in range(start, min(start + args.per_request, args.spans))]


def otlp_bodies(args: argparse.Namespace) -> tuple[list[bytes], dict[str, str]]:
    """The OTLP side's requests and their headers."""
    headers = {"Content-Type": "application/json" if args.encoding == "json" else "application/x-protobuf"}
    if args.gzip:
        headers["Content-Encoding"] = "gzip"
    out = []
    for start in range(0, args.spans, args.per_request):
        request = export_request(spans_from(start, args))
        raw = (json_format.MessageToJson(request).encode() if args.encoding == "json"
               else request.SerializeToString())
        out.append(gzip.compress(raw) if args.gzip else raw)
    return out, headers


def event_bodies(args: argparse.Namespace) -> list[bytes]:
    """The same content as POST /v1/events batches: other spans, mapped as the server maps."""
    out = []
    for start in range(0, args.spans, args.per_request):
        request = export_request(spans_from(start, args))
        mapped = map_spans(decode(request.SerializeToString(), "application/x-protobuf", ""), None)
        assert len(mapped.events) == EVENTS_PER_SPAN * len(request.resource_spans[0].scope_spans[0].spans)
        out.append(json.dumps({"events": [event_json(e) for e in mapped.events]}).encode())
    return out


def event_json(event: Any) -> dict[str, Any]:
    metadata = {"occurred_at": event.occurred_at.isoformat()} if event.occurred_at else {}
    # A client may not open the otel: streams the server derives (events/derived.py): the
    # same events on a stream of the client's own naming, one character longer.
    return {"stream_id": f"b{event.stream_id}", "type": event.type, "payload": event.payload,
            "event_id": str(event.event_id), "metadata": metadata}


def post_all(base: str, key: str, path: str, payloads: list[bytes], headers: dict[str, str],
             clients: int) -> float:
    """Post every body from ``clients`` threads, each with its client built before the
    clock; seconds from the first send to the last answer."""
    pending: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    for body in payloads:
        pending.put(body)
    errors: list[str] = []
    https = [httpx.Client(base_url=base, timeout=120,
                          headers={"Authorization": f"Bearer {key}", **headers}) for _ in range(clients)]
    go = threading.Barrier(clients + 1)

    def client(http: httpx.Client) -> None:
        with http:
            go.wait()
            while True:
                try:
                    body = pending.get_nowait()
                except queue.Empty:
                    return
                answer = http.post(path, content=body)
                if answer.status_code not in (200, 201):
                    errors.append(f"{answer.status_code} {answer.text[:300]}")

    threads = [threading.Thread(target=client, args=(h,)) for h in https]
    for t in threads:
        t.start()
    go.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    took = time.perf_counter() - started
    if errors:
        raise SystemExit(f"{len(errors)} requests to {path} failed, first: {errors[0]}")
    return took


@contextmanager
def served(args: argparse.Namespace) -> Iterator[tuple[str, str, SqlEventStore]]:
    with fresh_database(args.postgres) as url:
        engine = make_engine(url)
        key = create_key(engine, ["events:write"], "bench")
        port = free_port()
        command = [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1", "--port",
                   str(port), "--workers", "1", "--no-run-workers", "--no-access-log"]
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
               "HCP_DATABASE_URL": url, "HCP_DATA_DIR": args.data_dir}
        try:
            with process(command, env):
                wait_healthy(f"http://127.0.0.1:{port}")
                yield f"http://127.0.0.1:{port}", key, SqlEventStore(engine)
        finally:
            engine.dispose()


def side_otlp(args: argparse.Namespace, base: str, key: str, store: SqlEventStore) -> float:
    payloads, headers = otlp_bodies(args)
    before = store.head()
    took = post_all(base, key, "/v1/traces", payloads, headers, args.clients)
    stored = store.head() - before
    if stored != EVENTS_PER_SPAN * args.spans:
        raise SystemExit(f"OTLP stored {stored} events, not {EVENTS_PER_SPAN * args.spans}")
    return args.spans / took


def side_events(args: argparse.Namespace, base: str, key: str, store: SqlEventStore) -> float:
    payloads = event_bodies(args)
    before = store.head()
    took = post_all(base, key, "/v1/events", payloads, {"Content-Type": "application/json"}, args.clients)
    stored = store.head() - before
    if stored != EVENTS_PER_SPAN * args.spans:
        raise SystemExit(f"POST /v1/events stored {stored} events, not {EVENTS_PER_SPAN * args.spans}")
    return args.spans / took


def main() -> None:
    args = parse_args()
    otlp, events, ratios = [], [], []
    for r in range(args.repeats):
        idle = wait_for_idle(args.idle_wait)
        print(f"repeat {r + 1}/{args.repeats} (machine {idle:.0%} idle, {load_average()})", flush=True)
        with served(args) as (base, key, store):
            post_all(base, key, "/v1/events", event_bodies(argparse.Namespace(
                spans=args.per_request, per_request=args.per_request)),
                {"Content-Type": "application/json"}, 1)  # a first request, before any clock
            sides = [("otlp", side_otlp), ("events", side_events)]
            got = dict((name, side(args, base, key, store)) for name, side in
                       (sides if r % 2 == 0 else sides[::-1]))
        otlp.append(got["otlp"])
        events.append(got["events"])
        ratios.append(got["otlp"] / got["events"])
        print(f"            OTLP {got['otlp']:,.0f} spans/s ({EVENTS_PER_SPAN * got['otlp']:,.0f} events/s); "
              f"POST /v1/events {got['events']:,.0f} spans/s ({EVENTS_PER_SPAN * got['events']:,.0f} "
              f"events/s); ratio {ratios[-1]:.3f} ({load_average()} at the end)", flush=True)
    print(f"\nOTLP/HTTP {args.encoding}{' gzip' if args.gzip else ''}, {args.per_request} spans per "
          f"request, {args.clients} clients, one API process:")
    print(f"  POST /v1/traces: {statistics.median(otlp):,.0f} spans/s "
          f"({EVENTS_PER_SPAN * statistics.median(otlp):,.0f} events/s)")
    print(f"  POST /v1/events, the same events: {statistics.median(events):,.0f} spans/s "
          f"({EVENTS_PER_SPAN * statistics.median(events):,.0f} events/s)")
    print(f"  ratio (median of per-repeat ratios): {statistics.median(ratios):.3f} "
          f"(repeats {', '.join(f'{x:.3f}' for x in ratios)})")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"),
        help="an admin URL; the benchmark creates and drops its own databases")
    parser.add_argument("--spans", type=int, default=20_000, help="spans per side and repeat")
    parser.add_argument("--per-request", type=int, default=50,
                        help="spans per export request (x4 events per POST /v1/events batch)")
    parser.add_argument("--clients", type=int, default=4, help="concurrent posting threads")
    parser.add_argument("--encoding", choices=("protobuf", "json"), default="protobuf")
    parser.add_argument("--gzip", action="store_true", help="gzip the OTLP bodies")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle-wait", type=float, default=60.0,
                        help="most seconds to wait for an idle machine before each repeat")
    parser.add_argument("--data-dir", default=os.path.join(tempfile.gettempdir(), "hcp-bench-otlp"))
    args = parser.parse_args()
    if EVENTS_PER_SPAN * args.per_request > 500:
        parser.error("--per-request: at most 125 (a POST /v1/events batch holds 500 events)")
    return args


if __name__ == "__main__":
    main()
