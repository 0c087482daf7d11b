"""CPU seconds per process over a phase of a benchmark: who takes the machine's cores.

Linux only (it reads /proc). ``CpuAccount.start()`` and ``.stop()`` snapshot the user +
system time of every process of interest; ``report`` prints the difference per role,
per 1k events. Roles: the API (its process and its workers), the relay, the relay's
children (the Merkle tree builder), this benchmark, Kafka's JVM, every PostgreSQL
backend under the role of the process at the other end of its socket (found through
pg_stat_activity's client port, /proc/net/tcp and the clients' open sockets), the rest of
PostgreSQL (postmaster, WAL writer, checkpointer, autovacuum, backends of nobody here),
and what the machine spent besides (other users of the shared cores).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.engine import Engine

_TICK = os.sysconf("SC_CLK_TCK")
Snapshot = dict[tuple[int, int], tuple[str, float]]  # (pid, start time) -> role, CPU seconds
_PG_PORT_HEX = "1538"  # 5432


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads); 0 when it is gone."""
    return _cpu_and_start(pid)[0]


def _cpu_and_start(pid: int) -> tuple[float, int]:
    """utime + stime of ``pid`` and its start time (ticks since boot; -1 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, -1
    return (int(fields[11]) + int(fields[12])) / _TICK, int(fields[19])


_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_seconds() -> dict[str, float]:
    """The machine's CPU seconds by kind (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return {name: value / _TICK for name, value in zip(_STAT_FIELDS, fields, strict=True)}


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return found


def find_process(needle: str) -> int | None:
    """The first process whose command line contains ``needle`` (e.g. kafka.Kafka)."""
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    if needle.encode() in f.read():
                        return int(name)
            except OSError:
                continue
    return None




def _socket_inodes_by_client_port() -> dict[int, str]:
    """Local port -> socket inode, for the client side of every connection to port 5432."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            local, remote, inode = parts[1], parts[2], parts[9]
            if remote.rsplit(":", 1)[1] == _PG_PORT_HEX:
                found[int(local.rsplit(":", 1)[1], 16)] = inode
    return found


def _owner_of_inodes(pids: Iterable[int]) -> dict[str, int]:
    owners = {}
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    owners[target[8:-1]] = pid
        except OSError:
            continue
    return owners


@dataclass
class CpuAccount:
    """Snapshots of CPU time per role; ``roles`` maps a name to the root pid of a process
    tree (all its descendants count, unless a descendant is a root of its own)."""

    engine: Engine  # to ask pg_stat_activity which backend serves which client
    roles: dict[str, int]
    kafka: int | None = None
    _before: Snapshot = field(default_factory=dict)
    _machine: dict[str, float] = field(default_factory=dict)
    _after: Snapshot = field(default_factory=dict)
    _machine_after: dict[str, float] = field(default_factory=dict)

    def start(self) -> None:
        self._before, self._machine = self._snapshot(), machine_seconds()

    def stop(self) -> None:
        self._after, self._machine_after = self._snapshot(), machine_seconds()

    def per_role(self) -> dict[str, float]:
        """CPU seconds per role between ``start`` and ``stop``."""
        spent: dict[str, float] = defaultdict(float)
        for key, (role, seconds) in self._after.items():
            # Keyed by (pid, start time): a pid reused meanwhile is another process. Roles
            # come from the end (a kernel worker's name changes with its work).
            spent[role] += seconds - self._before.get(key, (role, 0.0))[1]
        return dict(spent)

    def report(self, events: int, wall_s: float) -> str:
        spent = {role: s for role, s in self.per_role().items() if s > 0}
        kinds = {k: self._machine_after[k] - self._machine[k] for k in _STAT_FIELDS}
        total = sum(kinds.values()) - kinds["idle"] - kinds["iowait"]
        per_k = 1e3 / events
        lines = [f"CPU per 1k events over {wall_s:.2f} s ({events:,} events; machine busy "
                 f"{total / wall_s:.2f} cores: {total * per_k * 1e3:.1f} ms per 1k, of which "
                 + ", ".join(f"{k} {v * per_k * 1e3:.1f}" for k, v in kinds.items()
                             if k not in ("idle", "iowait")) + "):"]
        listed = [(role, s) for role, s in spent.items() if not role.startswith("other: ")]
        others = sorted(((role[7:], s) for role, s in spent.items() if role.startswith("other: ")),
                        key=lambda kv: -kv[1])
        for role, seconds in sorted(listed, key=lambda kv: -kv[1]):
            lines.append(f"    {role:<34} {seconds * per_k * 1e3:8.1f} ms")
        lines.append("    other processes: " + ", ".join(
            f"{name} {s * per_k * 1e3:.1f}" for name, s in others[:8]))
        return "\n".join(lines)

    def _tree(self) -> dict[int, str]:
        owner: dict[int, str] = {}
        roots = {pid: role for role, pid in self.roles.items()}
        for role, pid in self.roles.items():
            stack = [pid]
            while stack:
                p = stack.pop()
                if p in owner or (p != pid and p in roots):
                    continue
                owner[p] = role
                stack += children(p)
        return owner

    def _snapshot(self) -> Snapshot:
        owner = self._tree()
        backends = self._backends(owner)
        snap: Snapshot = {}
        for pid in _all_pids():
            if pid in owner:
                role = owner[pid]
            elif pid == self.kafka:
                role = "kafka JVM"
            else:
                comm = _comm(pid)
                role = backends.get(pid, "postgres: other" if comm == "postgres" else f"other: {comm}")
            seconds, started = _cpu_and_start(pid)
            snap[(pid, started)] = (role, seconds)
        return snap

    def _backends(self, owner: dict[int, str]) -> dict[int, str]:
        inodes = _socket_inodes_by_client_port()
        owners = _owner_of_inodes(owner)
        with self.engine.connect() as conn:
            rows = conn.execute(text("SELECT pid, client_port FROM pg_stat_activity "
                                     "WHERE client_port IS NOT NULL")).all()
        found = {}
        for pid, port in rows:
            client = owners.get(inodes.get(int(port), ""))
            if client is not None:
                found[int(pid)] = f"postgres for {owner[client]}"
        return found
