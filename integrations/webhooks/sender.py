"""Sending one delivery: to the checked address, within one deadline, reading almost nothing.

- **The address that was checked.** Each attempt checks the target again
  (``targets.TargetPolicy``) and connects to the address the check returned, saying the
  name in the Host header and TLS's server name (so certificates are verified against the
  name). No redirect is followed and no proxy from the environment is used.
- **One deadline for the whole attempt** (resolving, connecting, sending, the answer's
  status): httpx's timeouts are per read, so a receiver that drips a byte a second would
  hold an attempt for ever. The name is resolved with that deadline (``targets.within``),
  then the request runs as a coroutine on the sender's event loop, cancelled at the
  deadline wherever it is.
- **A small read.** Only the status matters: the status line and headers are read (httpcore
  refuses headers over 100 KiB), never the body; the connection is closed after every
  attempt. Not kept alive, because a kept connection is keyed by address: another name on
  the same address would reuse a TLS session whose certificate was checked for the first.
- **Failures look alike.** Whatever went wrong (refused at the check, no connection, a
  reset, the deadline, a status other than 2xx), the outcome is one message, and it is
  handed back no sooner than the deadline: neither its text nor its time tells a closed
  port from a filtered one or from a web server. The cause goes to the server's log.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx

from integrations.webhooks.deliveries import Outcome
from integrations.webhooks.model import NOT_ACKNOWLEDGED
from integrations.webhooks.targets import Target, TargetPolicy, TargetRefused

log = logging.getLogger(__name__)
T = TypeVar("T")


class PinnedSender:
    """POSTs deliveries (thread-safe: every lane of the deliverer shares one)."""

    def __init__(self, policy: TargetPolicy, deadline_s: float,
                 verify: ssl.SSLContext | bool = True) -> None:
        self.policy, self.deadline_s = policy, deadline_s
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="hcp-webhook-sender",
                                        daemon=True)
        self._thread.start()
        self.client = self._run(_client(verify))

    def send(self, url: str, headers: dict[str, str], body: bytes) -> Outcome:
        """One attempt, on the caller's thread (a lane of the deliverer): the target is
        checked there (the policy's resolver has the attempt's deadline), then posted on the
        event loop within what is left of the deadline."""
        started = time.monotonic()
        try:
            target: Target | None = self.policy.check(url)
        except TargetRefused as exc:
            log.warning("webhook target %s refused at connection: %s", url, exc)
            target = None
        left = self.deadline_s - (time.monotonic() - started)
        return self._run(self._attempt(target, headers, body, left), self.deadline_s + 10)

    def close(self) -> None:
        self._run(self.client.aclose(), 10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def _run(self, work: Coroutine[Any, Any, T], wait_s: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(wait_s)

    async def _attempt(self, target: Target | None, headers: dict[str, str], body: bytes,
                       left_s: float) -> Outcome:
        started = time.perf_counter()
        deadline = self.loop.time() + max(0.0, left_s)
        status = None
        if target is not None:
            try:
                status = await self._post(target, headers, body, deadline)
            except Exception as exc:  # noqa: BLE001 (no connection, a reset, TLS, the deadline …: one outcome)
                log.info("webhook delivery to %s (%s) failed: %s: %s", target.netloc, target.address,
                         type(exc).__name__, exc)
        if status is not None and 200 <= status < 300:
            return Outcome(True, status, None, _ms(started))
        await asyncio.sleep(max(0.0, deadline - self.loop.time()))
        return Outcome(False, status, NOT_ACKNOWLEDGED, None)

    async def _post(self, target: Target, headers: dict[str, str], body: bytes, deadline: float) -> int:
        async with asyncio.timeout_at(deadline):
            answer = await self.client.send(_request(self.client, target, headers, body), stream=True)
            await answer.aclose()  # the body unread: the status is all a delivery needs
        return answer.status_code


async def _client(verify: ssl.SSLContext | bool) -> httpx.AsyncClient:
    # No per-operation timeout: the attempt's deadline (asyncio.timeout_at) bounds it all.
    return httpx.AsyncClient(follow_redirects=False, trust_env=False, verify=verify, timeout=None,  # noqa: S113
                             limits=httpx.Limits(max_connections=None, max_keepalive_connections=0))


def _request(client: httpx.AsyncClient, target: Target, headers: dict[str, str],
             body: bytes) -> httpx.Request:
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    return client.build_request("POST", target.pinned_url, content=body,
                                headers={**headers, "host": target.netloc}, extensions=extensions)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
