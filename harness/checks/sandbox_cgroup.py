"""One memory and pids limit over a whole answer: a cgroup per answer.

Rlimits are per process: sixteen processes of 256 MiB each hold 4 GiB, and memory that
is not mapped (System V segments, tmpfs pages) counts against no address space at all.
A cgroup's memory controller charges every page its processes cause (anonymous, shared,
tmpfs, kernel), and its pids controller counts every task (threads too), so one cgroup
around the answer bounds it whole.

The answer's first process enters the cgroup before it runs anything (a shell writes its
own pid into ``cgroup.procs``, then execs bubblewrap), so everything the answer starts
is born inside. Afterwards what is left is killed and the cgroup removed.

Where it is made, the first that works:

- **cgroup v2**: under this process's own cgroup, or its parent, whichever already
  delegates (or lets us enable) the ``memory`` and ``pids`` controllers and is writable.
  A server in a cgroup of its own holding its processes cannot (the kernel's "no internal
  processes" rule): under systemd give the unit ``Delegate=yes`` and
  ``DelegateSubgroup=server``, so the unit's cgroup is free for the answers.
- **cgroup v1** (hybrid hosts, older containers): a child of this process's cgroup in the
  ``memory`` hierarchy and one in the ``pids`` hierarchy, where both are writable.
- neither: ``find()`` answers None and the sandbox holds the answer to one process
  (``sandbox_seccomp``) under the rlimits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)
# Writes its own pid into each cgroup.procs named before "--", then execs the rest.
ENTER = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"'
REMOVE_WITHIN_S = 2.0


@dataclass(frozen=True)
class Hierarchy:
    """Where answers' cgroups are made in one mounted hierarchy, and what they limit."""

    version: int
    parent: Path
    controllers: tuple[str, ...]


@dataclass(frozen=True)
class Cgroups:
    hierarchies: tuple[Hierarchy, ...]

    @property
    def label(self) -> str:
        return f"cgroup v{self.hierarchies[0].version}"

    @contextlib.contextmanager
    def answer(self, memory_bytes: int, tasks: int) -> Iterator[AnswerCgroup]:
        """A fresh cgroup (one per hierarchy) for one answer, removed on the way out."""
        name = f"hcp-sandbox-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        made: list[Path] = []
        try:
            for hierarchy in self.hierarchies:
                path = hierarchy.parent / name
                path.mkdir()
                made.append(path)
                _limit(hierarchy, path, memory_bytes, tasks)
            yield AnswerCgroup(tuple(made))
        finally:
            for path in made:
                _remove(path)


@dataclass(frozen=True)
class AnswerCgroup:
    paths: tuple[Path, ...]

    def enter(self, argv: list[str]) -> list[str]:
        """``argv`` started from inside this cgroup."""
        procs = [str(p / "cgroup.procs") for p in self.paths]
        return ["/bin/sh", "-c", ENTER, "sh", *procs, "--", *argv]

    def __str__(self) -> str:
        return " ".join(shlex.quote(str(p)) for p in self.paths)


def find(proc: Path = Path("/proc/self")) -> Cgroups | None:
    """Where this process can make a cgroup per answer, or None."""
    try:
        own = _own_cgroups((proc / "cgroup").read_text())
        mounts = _mounts((proc / "mountinfo").read_text())
    except OSError:
        return None
    found = _v2(own, mounts) or _v1(own, mounts)
    for hierarchy in found.hierarchies if found else ():
        _sweep(hierarchy.parent)
    return found


def _sweep(parent: Path) -> None:
    """Remove the empty cgroups a server that died mid-answer left (never their
    processes, if any are left: those are not this process's to end)."""
    for path in parent.glob("hcp-sandbox-*-*"):
        pid = path.name.split("-")[2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()


def _own_cgroups(text: str) -> dict[str, str]:
    """{controller (or "" for v2): path} from /proc/self/cgroup."""
    own: dict[str, str] = {}
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    return own


def _mounts(text: str) -> list[tuple[str, Path, str, set[str]]]:
    """(fstype, mount point, root inside the hierarchy, super options) of cgroup mounts."""
    found = []
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((tail[0], Path(fields[4]), fields[3], set(tail[2].split(","))))
    return found


def _inside(mount: Path, root: str, path: str) -> Path | None:
    if not path.startswith(root):
        return None
    return mount / path[len(root):].lstrip("/")


def _v2(own: dict[str, str], mounts: list[tuple[str, Path, str, set[str]]]) -> Cgroups | None:
    if "" not in own:
        return None
    for fstype, mount, root, _ in mounts:
        here = _inside(mount, root, own[""]) if fstype == "cgroup2" else None
        if here is None:
            continue
        for parent in (here, here.parent):
            if parent.is_relative_to(mount) and _delegates(parent):
                return Cgroups((Hierarchy(2, parent, ("memory", "pids")),))
    return None


def _delegates(parent: Path) -> bool:
    try:
        available = (parent / "cgroup.controllers").read_text().split()
        if not {"memory", "pids"} <= set(available) or not os.access(parent, os.W_OK):
            return False
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not {"memory", "pids"} <= set(enabled):
            (parent / "cgroup.subtree_control").write_text("+memory +pids")
        return True
    except OSError:  # EBUSY: processes live in it (no internal processes), or no access
        return False


def _v1(own: dict[str, str], mounts: list[tuple[str, Path, str, set[str]]]) -> Cgroups | None:
    found = []
    for controller in ("memory", "pids"):
        for fstype, mount, root, options in mounts:
            here = (_inside(mount, root, own[controller])
                    if fstype == "cgroup" and controller in options and controller in own
                    else None)
            if here is not None and here.is_dir() and os.access(here, os.W_OK):
                found.append(Hierarchy(1, here, (controller,)))
                break
    return Cgroups(tuple(found)) if len(found) == 2 else None


def _limit(hierarchy: Hierarchy, path: Path, memory_bytes: int, tasks: int) -> None:
    if hierarchy.version == 2:
        _write(path, "memory.max", memory_bytes)
        _write(path, "memory.swap.max", 0, optional=True)
        _write(path, "memory.oom.group", 1, optional=True)  # the answer dies whole
        _write(path, "pids.max", tasks)
    elif hierarchy.controllers == ("memory",):
        _write(path, "memory.limit_in_bytes", memory_bytes)
        _write(path, "memory.memsw.limit_in_bytes", memory_bytes, optional=True)  # no swap
    else:
        _write(path, "pids.max", tasks)


def _write(path: Path, name: str, value: int, optional: bool = False) -> None:
    if optional and not (path / name).exists():
        return
    (path / name).write_text(str(value))


def _remove(path: Path) -> None:
    """Kill what is left in ``path`` and remove it (processes take a moment to go)."""
    deadline = time.monotonic() + REMOVE_WITHIN_S
    while True:
        _kill_all(path)
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as exc:  # EBUSY while the last processes exit
            if time.monotonic() > deadline:
                log.warning("could not remove the answer's cgroup %s: %s", path, exc)
                return
            time.sleep(0.01)


def _kill_all(path: Path) -> None:
    with contextlib.suppress(OSError):
        if (path / "cgroup.kill").exists():
            (path / "cgroup.kill").write_text("1")
            return
        for pid in (path / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
