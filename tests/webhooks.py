"""Helpers of the webhook tests: a receiver process and what it got."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # 24 bytes, base64; a test value


@contextmanager
def receiver(port: int, out: Path, secret: str = SECRET, delay: float = 0.0,
             status: int = 200, **hostile: object) -> Iterator[subprocess.Popen[bytes]]:
    """A receiver process on ``port``; ``hostile``: body, body_bytes, drip, redirect (see
    tests/webhook_receiver.py)."""
    options = [f"--{name.replace('_', '-')}={value}" for name, value in hostile.items()]
    proc = subprocess.Popen([sys.executable, "-m", "tests.webhook_receiver", str(port), secret,
                             str(out), "--delay", str(delay), "--status", str(status), *options],
                            cwd=Path(__file__).resolve().parents[1])
    try:
        wait_for(lambda: _listening(port), 20, "the receiver did not come up")
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


def _listening(port: int) -> bool:
    try:
        httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
        return True
    except httpx.TransportError:
        return False


def received(out: Path) -> list[dict[str, Any]]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def distinct(out: Path) -> list[dict[str, Any]]:
    """Each message once (receivers dedupe by webhook-id), in the order first received."""
    seen: dict[str, dict[str, Any]] = {}
    for got in received(out):
        seen.setdefault(got["id"], got)
    return list(seen.values())


def wait_for(ready: Callable[[], Any], timeout_s: float, message: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(message)
