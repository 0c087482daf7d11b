"""`hcp serve` with probes, for bench/http_cpu.py: where a request's wall time goes.

    python bench/probe_serve.py <hcp serve's options>

Wraps, without changing them, POST /v1/events's short way (server time per request)
and its thread hand-off (time queued for a pool thread), the group commit (time waiting
for a group, the group's size, the leader's wall and thread-CPU time in the store), and
records the collector's pauses by generation. With ``BENCH_PROBE_WAKES=1`` a thread
also sleeps 1 ms at a time and records how late it wakes: what a thread back from a
database round trip waits for the GIL, plus the OS's scheduling (it costs CPU).
SIGUSR1 forgets what was recorded (after a warm-up).
``BENCH_PROBE_SWITCH=<seconds>``: the switch interval the served app sets (A/B only). On exit
it prints percentiles to stderr.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

if not os.environ.get("PYTHONPATH"):  # else the code PYTHONPATH names (an A/B against main)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import api.append_route as route  # noqa: E402
from events.group_commit import GroupCommit  # noqa: E402

SAMPLES: dict[str, list[float]] = {name: [] for name in (
    "pool_queue", "request_in_thread", "group_wait", "group_size", "leader_store_wall",
    "leader_store_cpu", "leader_waits", "leader_wait_wall", "fast_route", "gc_pause_gen0",
    "gc_pause_gen1", "gc_pause_gen2", "late_wake")}


def _wrap_pool() -> None:
    real = route.run_in_threadpool

    async def timed(func: Any, *args: Any) -> Any:
        submitted = time.perf_counter()

        def run(*inner: Any) -> Any:
            began = time.perf_counter()
            SAMPLES["pool_queue"].append(began - submitted)
            try:
                return func(*inner)
            finally:
                SAMPLES["request_in_thread"].append(time.perf_counter() - began)

        return await real(run, *args)

    route.run_in_threadpool = timed


def _wrap_group_commit() -> None:
    real_commit, real_store = GroupCommit._commit_group, GroupCommit._store
    queued_at: dict[int, float] = {}
    real_append = GroupCommit.append

    def append(self: GroupCommit, batch: Any) -> Any:
        queued_at[threading.get_ident()] = time.perf_counter()
        return real_append(self, batch)

    def commit_group(self: GroupCommit) -> None:
        now = time.perf_counter()
        started = queued_at.pop(threading.get_ident(), now)
        SAMPLES["group_wait"].append(now - started)
        real_commit(self)

    def store(self: GroupCommit, group: Any) -> Any:
        SAMPLES["group_size"].append(len(group))
        wall, cpu = time.perf_counter(), time.thread_time()
        LEADER.waits = []
        try:
            return real_store(self, group)
        finally:
            SAMPLES["leader_store_wall"].append(time.perf_counter() - wall)
            SAMPLES["leader_store_cpu"].append(time.thread_time() - cpu)
            SAMPLES["leader_waits"].append(len(LEADER.waits))
            SAMPLES["leader_wait_wall"].append(sum(LEADER.waits))
            LEADER.waits = None

    GroupCommit.append, GroupCommit._commit_group, GroupCommit._store = append, commit_group, store  # type: ignore[method-assign]


LEADER = threading.local()
LOOP = ["?"]  # the event loop's module, as the app sees it (uvloop or asyncio)
WAIT_KINDS: dict[str, tuple[int, float]] = {}  # generator: count, seconds


def _wrap_driver_waits() -> None:
    """Count the leader's waits on the database (each about one round trip) and their wall
    time, which includes taking the GIL back afterwards."""
    import psycopg

    real = psycopg.Connection.wait

    def wait(self: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
        waits = getattr(LEADER, "waits", None)
        if waits is None:
            return real(self, gen, *args, **kwargs)
        began = time.perf_counter()
        try:
            return real(self, gen, *args, **kwargs)
        finally:
            waits.append(time.perf_counter() - began)
            name = getattr(gen, "__qualname__", type(gen).__name__)
            count, wall = WAIT_KINDS.get(name, (0, 0.0))
            WAIT_KINDS[name] = (count + 1, round(wall + waits[-1], 4))

    psycopg.Connection.wait = wait  # type: ignore[method-assign]


def _wrap_fast_route() -> None:
    real = route._fast

    async def fast(request: Any, endpoint: Any) -> Any:
        LOOP[0] = type(asyncio.get_running_loop()).__module__
        began = time.perf_counter()
        try:
            return await real(request, endpoint)
        finally:
            SAMPLES["fast_route"].append(time.perf_counter() - began)

    route._fast = fast


def _watch_gc() -> None:
    began = [0.0]

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        else:
            SAMPLES[f"gc_pause_gen{info['generation']}"].append(time.perf_counter() - began[0])

    gc.callbacks.append(callback)


def _late_wakes() -> None:
    while True:
        before = time.perf_counter()
        time.sleep(0.001)
        SAMPLES["late_wake"].append(time.perf_counter() - before - 0.001)


def _report() -> None:
    lines = []
    for name, values in SAMPLES.items():
        if len(values) < 2:
            continue
        qs = statistics.quantiles(values, n=100, method="inclusive")
        scale, unit = (1, "") if name in ("group_size", "leader_waits") else (1e3, " ms")
        lines.append(f"  {name:<20} n {len(values):>6} mean {statistics.fmean(values) * scale:7.2f} "
                     f"p50 {qs[49] * scale:7.2f} p90 {qs[89] * scale:7.2f} p99 {qs[98] * scale:7.2f}"
                     f" max {max(values) * scale:7.2f}{unit}")
    lines.append(f"  leader's waits by generator: {WAIT_KINDS}; event loop from {LOOP[0]}")
    text = "\n".join(lines)
    print(f"probe (switch interval {sys.getswitchinterval():.4f} s):\n{text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    if os.environ.get("BENCH_PROBE_SWITCH"):  # what the served app sets at startup
        import api.app

        api.app.SWITCH_INTERVAL_S = float(os.environ["BENCH_PROBE_SWITCH"])
    _wrap_pool()
    _wrap_group_commit()
    _wrap_fast_route()
    _wrap_driver_waits()
    _watch_gc()
    if os.environ.get("BENCH_PROBE_WAKES"):  # 1,000 wake-ups a second: opt in
        threading.Thread(target=_late_wakes, daemon=True).start()
    atexit.register(_report)
    signal.signal(signal.SIGUSR1, lambda *_: [v.clear() for v in (*SAMPLES.values(), WAIT_KINDS)])
    # uvicorn re-raises the SIGTERM it caught once it has shut down, so atexit never runs.
    import uvicorn

    real_shutdown = uvicorn.Server.shutdown

    async def shutdown(self: Any, sockets: Any = None) -> None:
        await real_shutdown(self, sockets)
        _report()
        SAMPLES.clear()

    uvicorn.Server.shutdown = shutdown  # type: ignore[method-assign]
    from cli.main import main

    sys.argv = ["hcp", "serve", *sys.argv[1:]]
    main()
