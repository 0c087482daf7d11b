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
_PG_PORT_HEX = "1538"  # 5432


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (all its threads); 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK


def machine_busy_seconds() -> float:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / _TICK


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


def _postgres_pids() -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/comm") as f:
                    if f.read().strip() == "postgres":
                        pids.append(int(name))
            except OSError:
                continue
    return pids


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
    _before: dict[tuple[str, int], float] = field(default_factory=dict)
    _machine: float = 0.0
    _after: dict[tuple[str, int], float] = field(default_factory=dict)
    _machine_after: float = 0.0

    def start(self) -> None:
        self._before, self._machine = self._snapshot(), machine_busy_seconds()

    def stop(self) -> None:
        self._after, self._machine_after = self._snapshot(), machine_busy_seconds()

    def per_role(self) -> dict[str, float]:
        spent: dict[str, float] = defaultdict(float)
        for key, seconds in self._after.items():
            spent[key[0]] += seconds - self._before.get(key, 0.0)
        spent["machine (all)"] = self._machine_after - self._machine
        return dict(spent)

    def report(self, events: int, wall_s: float) -> str:
        spent = self.per_role()
        total = spent.pop("machine (all)")
        spent["others (not listed)"] = total - sum(spent.values())
        lines = [f"CPU per 1k events over {wall_s:.2f} s ({events:,} events; "
                 f"machine busy {total / wall_s:.2f} cores):"]
        for role, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
            lines.append(f"    {role:<34} {seconds / events * 1e3 * 1e3:8.1f} ms")
        lines.append(f"    {'machine (all)':<34} {total / events * 1e6:8.1f} ms")
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

    def _snapshot(self) -> dict[tuple[str, int], float]:
        owner = self._tree()
        snap = {(role, pid): cpu_seconds(pid) for pid, role in owner.items()}
        if self.kafka is not None:
            snap[("kafka JVM", self.kafka)] = cpu_seconds(self.kafka)
        backends = self._backends(owner)
        for pid in _postgres_pids():
            snap[(backends.get(pid, "postgres: other"), pid)] = cpu_seconds(pid)
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
