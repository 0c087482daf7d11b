"""The demo's steps, one line each: what it does now, how long it has run, about how long is
left, and the process's resident memory (so a run that grows shows it as it grows).

The time left is the remaining steps at the mean length of the finished steps of the same
kind (serving, sampling, training and gating, evaluating); a kind not seen yet counts at
the mean of all finished steps, so the first lines guess low and the guess firms up after
the first generation. The report keeps each step's length and memory (``Steps.record``).
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console


def rss_mb() -> float:
    """This process's resident memory now, MB (Linux: /proc/self/status)."""
    try:
        for line in open("/proc/self/status"):  # noqa: SIM115 (a read of a few lines)
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KB on Linux


@dataclass
class Steps:
    console: Console
    plan: list[tuple[str, str]]  # (kind, what) in order
    started: float = field(default_factory=time.perf_counter)
    done: list[dict[str, Any]] = field(default_factory=list)

    @contextmanager
    def step(self, kind: str, what: str) -> Iterator[None]:
        index = len(self.done) + 1
        began = time.perf_counter()
        left = self.left(index - 1)
        guess = f"about {_clock(left)} left" if left is not None else "time left known after a step"
        self.console.print(f"[bold][{index}/{len(self.plan)}][/] {what}: "
                           f"{_clock(began - self.started)} so far, {guess}; "
                           f"{rss_mb() / 1024:.2f} GB resident")
        yield
        self.done.append({"kind": kind, "what": what, "seconds": round(time.perf_counter() - began, 1),
                          "rss_mb": round(rss_mb(), 1)})

    def left(self, finished: int) -> float | None:
        """Seconds the plan's steps from ``finished`` on should take (None: nothing ran yet)."""
        if not self.done:
            return None
        mean = sum(d["seconds"] for d in self.done) / len(self.done)
        by_kind: dict[str, list[float]] = {}
        for d in self.done:
            by_kind.setdefault(d["kind"], []).append(d["seconds"])
        return sum(sum(by_kind[k]) / len(by_kind[k]) if k in by_kind else mean
                   for k, _ in self.plan[finished:])

    def record(self) -> dict[str, Any]:
        return {"steps": self.done, "peak_rss_mb": round(peak_rss_mb(), 1)}


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
