"""Load generation for the ingest benchmark: processes, HTTP clients, a Kafka watcher.

Every loop here is bounded in count and time and talks to 127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka import OFFSET_END, TIMESTAMP_LOG_APPEND_TIME, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parent.parent
TEXT = "please refactor this function so that it streams rows instead of loading them " * 2


def make_items(events: int, streams: int, tag: str = "") -> list[dict[str, Any]]:
    """POST items, built before any clock starts: ~300-byte realistic turns."""
    names = [f"session{tag}-{uuid.uuid4().hex[:12]}" for _ in range(streams)]
    return [{"stream_id": names[i % streams], "type": "turn.user", "event_id": str(uuid.uuid4()),
             "payload": {"text": TEXT, "n": i},
             "metadata": {"actor": f"user-{i % 97}", "specialist": "coding"}}
            for i in range(events)]


def bodies(items: list[dict[str, Any]], batch: int) -> list[bytes]:
    return [json.dumps({"events": items[i:i + batch]}).encode() for i in range(0, len(items), batch)]


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


def wait_until(condition: Callable[[], bool], timeout: float, what: str, poll: float = 0.005) -> float:
    """Poll ``condition``; return the perf_counter time it first held."""
    deadline = time.perf_counter() + timeout
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(poll)
    return time.perf_counter()


def post_all(base: str, key: str, payloads: list[bytes], clients: int) -> float:
    """Post every body from ``clients`` threads as fast as answers come; seconds taken."""
    started, finished = post_timed(base, key, payloads, clients)
    return finished - started


def post_timed(base: str, key: str, payloads: list[bytes], clients: int,
               ready: Callable[[], None] | None = None) -> tuple[float, float]:
    """``post_all``'s posting, as (perf_counter when the first body went, when the last
    answer came). Each thread's httpx client is built before the clock starts, as the
    in-process peers build their inputs before theirs: building one costs ~60 ms of CPU
    (an SSL context, even for http://), which inside the clock delayed the last of four
    threads' first request by ~0.2 s, a tenth of a 20k-event HTTP phase."""
    pending = queue.SimpleQueue[bytes]()
    for body in payloads:
        pending.put(body)
    errors: list[str] = []
    https = [httpx.Client(base_url=base, headers=_headers(key), timeout=60) for _ in range(clients)]
    go = threading.Barrier(clients + 1)

    def client(http: httpx.Client) -> None:
        with http:
            go.wait()
            while True:
                try:
                    body = pending.get_nowait()
                except queue.Empty:
                    return
                response = http.post("/v1/events", content=body)
                if response.status_code != 201:
                    errors.append(response.text)

    threads = [threading.Thread(target=client, args=(http,)) for http in https]
    for t in threads:
        t.start()
    if ready is not None:  # e.g. a CPU meter that should not count building the clients
        ready()
    go.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    finished = time.perf_counter()
    if errors:
        raise SystemExit(f"{len(errors)} batches failed, first: {errors[0][:300]}")
    return started, finished


def create_timed_topic(bootstrap: str, topic: str, partitions: int = 3) -> None:
    """``topic`` with the broker's append time as each message's timestamp (LogAppendTime;
    the relay creates topics with the default CreateTime): the moment a message became
    readable in Kafka, whenever the watcher, which shares its process with the load
    generator's threads, gets to run."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"message.timestamp.type": "LogAppendTime"}
    admin.create_topics([NewTopic(topic, partitions, 1, config=config)])[topic].result(30)


class KafkaWatcher:
    """Consumes a topic from its end in a thread and records, per message, how long after
    the event's ``recorded_at`` (set inside the appending transaction, before commit) it
    became visible here (``delays``: an upper bound of commit -> visible, which includes
    waiting for this process's GIL) and, on a ``create_timed_topic`` topic, when the broker
    appended it (``appended``)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 3) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                                  "enable.auto.commit": False, "fetch.wait.max.ms": 5,
                                  "fetch.min.bytes": 1})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_END) for p in range(partitions)])
        self.delays: list[float] = []
        self.appended: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for message in self.consumer.consume(1000, timeout=0.05):
                if message.error() is None:
                    seen = time.time()
                    recorded = datetime.fromisoformat(
                        json.loads(message.value())["metadata"]["recorded_at"]).timestamp()
                    self.delays.append(seen - recorded)
                    kind, millis = message.timestamp()
                    if kind == TIMESTAMP_LOG_APPEND_TIME:
                        self.appended.append(millis / 1000 - recorded)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(10)
        self.consumer.close()


def quantile(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=1000, method="inclusive")[round(q * 1000) - 1]


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


def wait_for_idle(max_wait: float, want: float = 0.75) -> float:
    """Sample /proc/stat each second until the CPUs are ``want`` idle or ``max_wait`` passes."""
    deadline, idle = time.monotonic() + max_wait, 0.0
    while True:
        before = _cpu_times()
        time.sleep(1.0)
        after = _cpu_times()
        idle = (after[0] - before[0]) / max(1, after[1] - before[1])
        if idle >= want or time.monotonic() > deadline:
            return idle


def load_average() -> str:
    """As `uptime` prints it: the machine is shared, so every figure goes out with its load."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)
