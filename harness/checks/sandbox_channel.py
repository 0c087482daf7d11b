"""The candidate's side of the sandbox as the server sees it: the channel its job goes
in by and its values come back by (a deadline, a cap on what is read), its process
group, and the processes rlimit it gets."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Outcome:
    """What came back from one candidate: one entry per test call ({"value": v} or
    {"raised": "TypeName"}), or why there is none (``failed``)."""

    values: tuple[dict[str, Any], ...] = ()
    failed: str | None = None



def process_limit(extra: int) -> int:
    # As root the driver becomes nobody, whose processes are the sandboxes' alone. Without
    # root the sandbox keeps this user's id, and RLIMIT_NPROC counts all of its tasks.
    if os.geteuid() == 0:
        return extra
    return _own_tasks() + extra


def _own_tasks() -> int:
    uid, count = str(os.getuid()), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [uid]:
            count += int(fields.get("Threads", "1"))
    return count


def exchange(proc: subprocess.Popen[bytes], job: bytes, deadline_s: float, cap: int) -> Outcome:
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(job)
        proc.stdin.close()
    except BrokenPipeError:
        return Outcome(failed="died")
    fd, chunks, size = proc.stdout.fileno(), [], 0
    deadline = time.monotonic() + deadline_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return Outcome(failed="timeout")
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        size += len(chunk)
        if size > cap:
            return Outcome(failed="result too large")
        chunks.append(chunk)
    return _parse(b"".join(chunks))


def _parse(raw: bytes) -> Outcome:
    if not raw:
        return Outcome(failed="died")  # killed by an rlimit, or crashed in C
    try:
        doc = json.loads(raw)
        if "failed" in doc:
            return Outcome(failed=str(doc["failed"])[:64])
        return Outcome(values=tuple(doc["values"]))
    except (ValueError, TypeError, KeyError, RecursionError):
        return Outcome(failed="unreadable result")


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()
