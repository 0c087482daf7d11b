"""Webhook delivery benchmark: commit -> receiver latency (goal p95 < 2 s) and nothing lost
across a receiver outage and a server killed mid-delivery (goal 0 lost).

    .venv/bin/python bench/webhooks.py [--events 50] [--interval 0.2] [--outage-s 15] [--repeats 3]

Needs PostgreSQL (scripts/services.sh up). Each repeat waits for the machine to be idle,
creates a throw-away database with an admin key, starts `hcp serve` as deployed in
embedded mode (the deliverer is a thread of it, with its default backoff and timeout)
and a receiver process (bench/webhook_receiver.py, which verifies each delivery with the
`standardwebhooks` package), subscribes the receiver to `contract.published`, and runs:

* steady: ``--events`` contract versions published through the API, one every
  ``--interval`` s; latency = the receiver's arrival time - the event's ``recorded_at``
  (its commit; one machine, one clock). Beside it, measured in the same repeat, the
  floor any deliverer pays: a bare POST of a delivery-sized body from this process to
  the same receiver (p95);
* outage: the receiver stopped, ``--events`` more published, ``--outage-s`` waited, the
  receiver started again: every one must arrive (lost = published - distinct ids
  received); the time from the receiver's return to the last arrival is printed (it
  includes the deliverer's backoff, 1 s doubled per failure by default);
* restart: the receiver answering after 0.1 s each, ``--events`` more published, the
  server killed (SIGKILL) once a few of them arrived, started again: every one must arrive.

Duplicates (a delivery whose 2xx the killed server never recorded is sent again; at least
once) are counted, not lost. Latency percentiles are per repeat; the figure is the median
over repeats, and the p95 ratio to the bare POST's is the median of per-repeat ratios.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from hcp_client import Client
from load import free_port, load_average, quantile, wait_for_idle, wait_healthy
from scratch import fresh_database  # bench/scratch.py, beside this script

from access.keys import create_key
from kernel.db import make_engine

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = (ROOT / "examples" / "contracts" / "default.toml").read_text()
RECEIVER = Path(__file__).resolve().parent / "webhook_receiver.py"


class Receiver:
    def __init__(self, port: int, secret: str, out: Path) -> None:
        self.port, self.secret, self.out = port, secret, out
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, delay: float = 0.0) -> None:
        self.proc = subprocess.Popen([sys.executable, str(RECEIVER), str(self.port), self.secret,
                                      str(self.out), "--delay", str(delay)])
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1)
                return
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise SystemExit("the receiver did not come up") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def lines(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        return [json.loads(x) for x in self.out.read_text().splitlines() if x.strip()]

    def first_of(self, ids: set[str]) -> dict[str, dict[str, Any]]:
        """Each id's first arrival."""
        seen: dict[str, dict[str, Any]] = {}
        for line in self.lines():
            if line["id"] in ids:
                seen.setdefault(line["id"], line)
        return seen


class Server:
    def __init__(self, env: dict[str, str], port: int) -> None:
        self.env, self.port = env, port
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1",
                                      "--port", str(self.port), "--no-access-log"], env=self.env,
                                     cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_healthy(self.url)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)


def publish(hcp: Client, tag: str) -> str:
    """A new contract's first version, published; the id of its contract.published event."""
    name = f"bench-{tag}-{uuid.uuid4().hex[:8]}"
    draft = hcp.create_draft(name, CONTRACT.replace('name = "default"', f'name = "{name}"'))
    hcp.publish(name, draft.version)
    found = [e for e in hcp.iter_stream(f"contract:{name}") if e.type == "contract.published"]
    if len(found) != 1:
        raise SystemExit(f"no contract.published event on contract:{name}")
    return found[0].event_id


def wait_all(receiver: Receiver, ids: set[str], timeout: float) -> float:
    """perf_counter time when every id had arrived (SystemExit naming how many did not)."""
    deadline = time.perf_counter() + timeout
    while len(receiver.first_of(ids)) < len(ids):
        if time.perf_counter() > deadline:
            lost = len(ids) - len(receiver.first_of(ids))
            raise SystemExit(f"{lost} of {len(ids)} deliveries never arrived in {timeout:.0f} s")
        time.sleep(0.05)
    return time.perf_counter()


def bare_post_p95(receiver: Receiver, samples: int) -> float:
    """The floor: this process POSTing a delivery-sized, signed-looking body to the receiver."""
    stamp = "2026-01-01T00:00:00+00:00"
    body = json.dumps({"type": "contract.published", "timestamp": stamp,
                       "data": {"recorded_at": stamp, "payload": {"x": "y" * 400}}}).encode()
    took = []
    with httpx.Client(timeout=10) as http:
        for _ in range(samples):
            started = time.perf_counter()
            http.post(f"http://127.0.0.1:{receiver.port}/", content=body,
                      headers={"webhook-id": "floor", "webhook-timestamp": "0", "webhook-signature": "v1,x"})
            took.append(time.perf_counter() - started)
    return quantile(took, 0.95)


@contextmanager
def world(args: argparse.Namespace) -> Iterator[tuple[Server, Receiver, Client]]:
    with fresh_database(args.postgres) as url, tempfile.TemporaryDirectory(prefix="hcp-bench-hooks-") as tmp:
        engine = make_engine(url)
        key = create_key(engine, ["admin"], "bench")
        engine.dispose()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
               "HCP_DATABASE_URL": url, "HCP_DATA_DIR": tmp,
               "HCP_WEBHOOK_ALLOWED_TARGETS": '["127.0.0.1/32"]'}  # the receiver's loopback
        server = Server(env, free_port())
        secret = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
        receiver = Receiver(free_port(), secret, Path(tmp) / "received.jsonl")
        server.start()
        try:
            with Client(server.url, key, timeout=60) as hcp:
                hcp.subscribe_webhook(f"http://127.0.0.1:{receiver.port}/hcp", ["contract.published"], secret)
                yield server, receiver, hcp
        finally:
            receiver.stop()
            server.stop()


def one_repeat(args: argparse.Namespace) -> dict[str, float]:
    out: dict[str, float] = {}
    with world(args) as (server, receiver, hcp):
        receiver.start()
        steady = set()
        for _ in range(args.events):
            steady.add(publish(hcp, "steady"))
            time.sleep(args.interval)
        wait_all(receiver, steady, 60)
        latencies = [g["arrived"] - g["recorded"] for g in receiver.first_of(steady).values()]
        out.update(p50=quantile(latencies, 0.5), p95=quantile(latencies, 0.95), max=max(latencies),
                   floor_p95=bare_post_p95(receiver, args.events))

        receiver.stop()
        outage = {publish(hcp, "outage") for _ in range(args.events)}
        time.sleep(args.outage_s)
        back = time.perf_counter()
        receiver.start()
        out["outage_drain_s"] = wait_all(receiver, outage, 600) - back

        receiver.stop()
        receiver.start(delay=0.1)  # deliveries in flight when the server dies
        restart = {publish(hcp, "restart") for _ in range(args.events)}
        while len(receiver.first_of(restart)) < min(3, args.events):
            time.sleep(0.02)
        server.kill()
        out["delivered_before_kill"] = len(receiver.first_of(restart))
        restarted = time.perf_counter()
        server.start()
        out["restart_drain_s"] = wait_all(receiver, restart, 600) - restarted
        every = steady | outage | restart
        lines = [g for g in receiver.lines() if g["id"] in every]
        out["lost"] = len(every) - len({g["id"] for g in lines})
        out["duplicates"] = len(lines) - len({g["id"] for g in lines})
        out["invalid"] = sum(not g["valid"] for g in lines)
    return out


def main() -> None:
    args = parse_args()
    runs = []
    for r in range(args.repeats):
        idle = wait_for_idle(args.idle_wait)
        print(f"repeat {r + 1}/{args.repeats} (machine {idle:.0%} idle, {load_average()})", flush=True)
        got = one_repeat(args)
        runs.append(got)
        print(f"            latency p50 {got['p50'] * 1000:.0f} ms, p95 {got['p95'] * 1000:.0f} ms, "
              f"max {got['max'] * 1000:.0f} ms (bare POST p95 {got['floor_p95'] * 1000:.1f} ms); "
              f"after the outage all in {got['outage_drain_s']:.1f} s; after the kill "
              f"({got['delivered_before_kill']:.0f} delivered before it) all in "
              f"{got['restart_drain_s']:.1f} s; lost {got['lost']:.0f}, duplicates "
              f"{got['duplicates']:.0f}, bad signatures {got['invalid']:.0f} ({load_average()} at the end)",
              flush=True)

    def median(name: str) -> float:
        return statistics.median(r[name] for r in runs)

    each = ", ".join(f"{r['p95'] * 1000:.0f}" for r in runs)
    print(f"\n{args.events} contract.published events per phase, one every {args.interval} s "
          "in the steady phase:")
    print(f"  commit -> receiver p95: {median('p95') * 1000:.0f} ms (p50 {median('p50') * 1000:.0f} ms; "
          f"repeats {each} ms); goal < 2000 ms")
    print(f"  bare POST to the receiver p95: {median('floor_p95') * 1000:.1f} ms; ratio (median of "
          f"per-repeat): {statistics.median(r['p95'] / r['floor_p95'] for r in runs):.1f}")
    print(f"  lost across a {args.outage_s:.0f} s receiver outage and a SIGKILLed server: "
          f"{sum(r['lost'] for r in runs):.0f} of {3 * args.events * len(runs)}; duplicates "
          f"{sum(r['duplicates'] for r in runs):.0f}; bad signatures {sum(r['invalid'] for r in runs):.0f}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", default=os.environ.get(
        "HCP_TEST_POSTGRES_URL", "postgresql+psycopg://hcp:hcp@127.0.0.1:5432/hcp_test"),
        help="an admin URL; the benchmark creates and drops its own databases")
    parser.add_argument("--events", type=int, default=50, help="events per phase")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between steady publications")
    parser.add_argument("--outage-s", type=float, default=15.0, help="how long the receiver is down")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--idle-wait", type=float, default=60.0,
                        help="most seconds to wait for an idle machine before each repeat")
    args = parser.parse_args()
    if args.events < 3:
        parser.error("--events: at least 3 (the restart phase waits for 3 deliveries)")
    return args


if __name__ == "__main__":
    main()
