"""Dependency probes for /healthz: the database always, Kafka and Redis when configured.

Each probe runs in its own thread and is waited for at most ``timeout_s``, so a
dependency that hangs (an unreachable host, a full connection pool) makes the check
report it down in bounded time instead of hanging the health endpoint with it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.engine import Engine

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Probe:
    name: str
    ok: bool
    latency_ms: float
    error: str | None = None


class DependencyProbes:
    def __init__(self, engine: Engine, kafka_bootstrap: str, redis_url: str, timeout_s: float) -> None:
        self.engine, self.kafka_bootstrap, self.redis_url = engine, kafka_bootstrap, redis_url
        self.timeout_s = timeout_s

    def check(self) -> list[Probe]:
        """One probe per configured dependency, all at once, each bounded by the timeout."""
        checks: dict[str, Callable[[], None]] = {"database": self._database}
        if self.kafka_bootstrap:
            checks["kafka"] = self._kafka
        if self.redis_url:
            checks["redis"] = self._redis
        # No context manager: its exit would wait for a probe that hangs past the timeout.
        pool = ThreadPoolExecutor(max_workers=len(checks), thread_name_prefix="hcp-health")
        try:
            deadline = time.monotonic() + self.timeout_s
            futures = {name: pool.submit(_timed, name, probe) for name, probe in checks.items()}
            return [self._wait(name, future, deadline) for name, future in futures.items()]
        finally:
            pool.shutdown(wait=False)

    def _wait(self, name: str, future: Future[Probe], deadline: float) -> Probe:
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            return Probe(name, False, self.timeout_s * 1000, f"no answer within {self.timeout_s} s")

    def _database(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def _kafka(self) -> None:
        from kafka import KafkaAdminClient  # only where Kafka is configured

        timeout_ms = int(self.timeout_s * 1000)
        client = KafkaAdminClient(bootstrap_servers=self.kafka_bootstrap, client_id="hcp-health",
                                  request_timeout_ms=timeout_ms, bootstrap_timeout_ms=timeout_ms)
        try:
            client.describe_cluster()
        finally:
            client.close()

    def _redis(self) -> None:
        import redis  # only where Redis is configured

        client = redis.Redis.from_url(self.redis_url, socket_timeout=self.timeout_s,
                                      socket_connect_timeout=self.timeout_s)
        try:
            client.ping()
        finally:
            client.close()


def _timed(name: str, probe: Callable[[], None]) -> Probe:
    started = time.perf_counter()
    error = None
    try:
        probe()
    except Exception as exc:  # any failure of a dependency means: down
        # The body names the kind only (/healthz needs no key; the message holds host names).
        log.warning("health check of %s failed: %s", name, exc)
        error = type(exc).__name__
    return Probe(name, error is None, round((time.perf_counter() - started) * 1000, 2), error)
