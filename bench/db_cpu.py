"""CPU seconds PostgreSQL spends for one database while a command runs: its backends (those
pg_stat_activity shows connected to that database, sampled as they come and go) read from
/proc. With other work on the shared cores, wall time says little; the CPU a command and
its database take says what it costs. Linux only."""

from __future__ import annotations

import os
import threading

from cpu_account import _cpu_and_start  # bench/, beside this script
from sqlalchemy import text
from sqlalchemy.engine import Engine

_TICK = os.sysconf("SC_CLK_TCK")
_BACKENDS = text("SELECT pid FROM pg_stat_activity WHERE datname = :db AND pid <> pg_backend_pid()")


class DatabaseCpu:
    """``with DatabaseCpu(admin_engine, "hcp_bench_lineage") as cpu: …``, then ``cpu.seconds``."""

    def __init__(self, engine: Engine, database: str, every: float = 0.2) -> None:
        self.engine, self.database, self.every = engine, database, every
        self.first: dict[tuple[int, int], float] = {}
        self.last: dict[tuple[int, int], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="db-cpu", daemon=True)

    def __enter__(self) -> DatabaseCpu:
        with open("/proc/uptime") as f:
            self.began = float(f.read().split()[0]) * _TICK  # a backend started after: all of it counts
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        return sum(self.last[k] - self.first[k] for k in self.last)

    def _run(self) -> None:
        with self.engine.connect() as conn:
            while True:
                for pid in conn.execute(_BACKENDS, {"db": self.database}).scalars():
                    cpu, start = _cpu_and_start(int(pid))
                    if start >= 0:
                        self.first.setdefault((int(pid), start), 0.0 if start >= self.began else cpu)
                        self.last[(int(pid), start)] = cpu
                conn.rollback()
                if self._stop.wait(self.every):
                    return
