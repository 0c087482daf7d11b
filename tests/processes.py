"""Processes as /proc shows them (Linux), for tests that start commands which start
children of their own (the relay's tree builder, `hcp evaluator --processes`)."""

from __future__ import annotations

from pathlib import Path


def children_of(parent: int, named: str = "") -> list[int]:
    """Live processes whose parent is ``parent`` and whose command line holds ``named``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and named in _cmdline(entry) and _ppid(entry) == parent:
            found.append(int(entry.name))
    return found


def gone(pid: int) -> bool:
    """Exited (a zombie waiting for whoever adopted it to reap it counts as exited)."""
    stat = _read(Path(f"/proc/{pid}/stat"))
    return stat is None or stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _cmdline(entry: Path) -> str:
    return (_read(entry / "cmdline") or "").replace("\0", " ")


def _ppid(entry: Path) -> int:
    stat = _read(entry / "stat")
    return int(stat.rsplit(")", 1)[1].split()[1]) if stat else -1


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # the process ended meanwhile, or is not a process
        return None
