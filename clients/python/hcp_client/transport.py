"""One request, as both clients send it: the key, retries on 503 (and 429) that honour
``Retry-After``, errors as ``HcpError``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from hcp_client.errors import error_of

RETRIED = (429, 503)


@dataclass(frozen=True)
class Retry:
    attempts: int = 5  # tries in all
    default_wait_s: float = 1.0  # when the answer has no Retry-After
    most_wait_s: float = 30.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def wait_s(self, answer: httpx.Response, attempt: int) -> float:
        given = answer.headers.get("retry-after", "")
        try:
            wait = float(given)
        except ValueError:
            wait = self.default_wait_s * 2 ** (attempt - 1)
        return min(max(wait, 0.0), self.most_wait_s)


def headers_of(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def checked(answer: httpx.Response) -> httpx.Response:
    if answer.status_code >= 400:
        try:
            body: Any = answer.json()
        except ValueError:
            body = answer.text
        raise error_of(answer.status_code, body)
    return answer


def send(client: httpx.Client, retry: Retry, method: str, path: str, **options: Any) -> httpx.Response:
    for attempt in range(1, retry.attempts + 1):
        answer = client.request(method, path, **options)
        if answer.status_code not in RETRIED or attempt == retry.attempts:
            return checked(answer)
        retry.sleep(retry.wait_s(answer, attempt))
    raise AssertionError("unreachable")


async def send_async(client: httpx.AsyncClient, retry: Retry, method: str, path: str,
                     **options: Any) -> httpx.Response:
    for attempt in range(1, retry.attempts + 1):
        answer = await client.request(method, path, **options)
        if answer.status_code not in RETRIED or attempt == retry.attempts:
            return checked(answer)
        await asyncio.sleep(retry.wait_s(answer, attempt))
    raise AssertionError("unreachable")
