"""Open-loop load generator in processes of its own, for the single-event POST latency.

The bench process also runs a Kafka watcher, pollers and its own bookkeeping; a load
generator sharing its GIL fell 85-270 ms behind its schedule at p99, so the latency it
reported was partly its own. Here each of ``procs`` child processes (``python
bench/pacer.py``, job on stdin, samples on stdout) sends its share of the bodies, body i
due at ``start + i / rate`` on the system-wide monotonic clock, over keep-alive
connections (one per worker thread, ``http.client``: lighter than httpx). Per request it
records the latency from the scheduled send (coordinated-omission-correct: a server that
stalls is charged for the requests that queued behind it) and from the actual send, and
how late the generator itself sent it while it had a free worker (its own lag: if that
is not small, the actual-send figure flatters the server and the scheduled one is the
figure to quote).
"""

from __future__ import annotations

import http.client
import json
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit


@dataclass
class Paced:
    """Seconds per request: from its scheduled send, from its actual send, the generator's
    own lateness (send - due while a worker was free) and the wait for a free worker."""

    scheduled: list[float] = field(default_factory=list)
    actual: list[float] = field(default_factory=list)
    lag: list[float] = field(default_factory=list)
    queued: list[float] = field(default_factory=list)


def paced_processes(base: str, key: str, payloads: list[bytes], rate: float,
                    procs: int = 2, workers: int = 16) -> Paced:
    """Send ``payloads`` open loop at ``rate``/s from ``procs`` processes; every sample."""
    start = time.monotonic() + 0.5 + 0.1 * procs  # time for the children to start up
    children = []
    for k in range(procs):
        job = {"base": base, "key": key, "rate": rate, "start": start, "first": k, "stride": procs,
               "workers": workers, "bodies": [b.decode() for b in payloads[k::procs]]}
        child = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE)
        assert child.stdin is not None
        child.stdin.write(json.dumps(job).encode())
        child.stdin.close()
        children.append(child)
    out = Paced()
    failed: list[str] = []
    for child in children:
        assert child.stdout is not None
        result = json.loads(child.stdout.read())
        child.wait(60)
        for name in ("scheduled", "actual", "lag", "queued"):
            getattr(out, name).extend(result[name])
        failed.extend(result["errors"])
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, first: {failed[0][:300]}")
    return out


def _run(job: dict) -> dict:
    """One child's share: body j of it is body ``first + j * stride`` of the whole run."""
    target = urlsplit(job["base"])
    headers = {"Authorization": f"Bearer {job['key']}", "Content-Type": "application/json"}
    due: queue.SimpleQueue[tuple[float, bytes] | None] = queue.SimpleQueue()
    for j, body in enumerate(job["bodies"]):
        due.put((job["start"] + (job["first"] + j * job["stride"]) / job["rate"], body.encode()))
    for _ in range(job["workers"]):
        due.put(None)
    out: dict[str, list] = {"scheduled": [], "actual": [], "lag": [], "queued": [], "errors": []}

    def worker() -> None:
        conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        while (item := due.get()) is not None:
            at, body = item
            free = time.monotonic()  # when this worker could take the request
            if at > free:
                time.sleep(at - free)
            sent = time.monotonic()
            conn.request("POST", "/v1/events", body, headers)
            response = conn.getresponse()
            answer = response.read()
            done = time.monotonic()
            out["scheduled"].append(done - at)
            out["actual"].append(done - sent)
            out["lag"].append(sent - max(at, free))
            out["queued"].append(max(0.0, free - at))
            if response.status != 201:
                out["errors"].append(answer.decode(errors="replace"))
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(job["workers"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


if __name__ == "__main__":
    sys.setswitchinterval(0.0005)  # a sleeping worker due now gets the GIL promptly
    json.dump(_run(json.loads(sys.stdin.buffer.read())), sys.stdout)
