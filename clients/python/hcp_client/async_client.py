"""The asynchronous client: the same calls as ``Client``, awaited."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from hcp_client import calls
from hcp_client import models as m
from hcp_client.client import TERMINAL_RUN
from hcp_client.sessions import AsyncSession
from hcp_client.transport import Retry, headers_of, send_async


class AsyncClient:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30.0,
                 retry: Retry | None = None, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.http = httpx.AsyncClient(base_url=base_url, headers=headers_of(api_key), timeout=timeout,
                                      transport=transport)
        self.retry = retry or Retry()

    async def do(self, call: calls.Call) -> Any:
        answer = await send_async(self.http, self.retry, call.method, call.path, params=call.params,
                                  json=call.json)
        return call.parse(answer.json())

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def health(self) -> m.HealthOut:
        return await self.do(calls.health())

    async def append(self, events: list[Any]) -> m.AppendedBatchOut:
        return await self.do(calls.append(events))

    async def event(self, event_id: str) -> m.RecordedEventOut:
        return await self.do(calls.event(event_id))

    async def iter_events(self, after: int = 0, page: int = 500) -> AsyncIterator[m.RecordedEventOut]:
        while True:
            got: m.EventPage = await self.do(calls.feed(after, page))
            for event in got.events:
                yield event
            if not got.events or got.next_after >= got.head:
                return
            after = got.next_after

    def session(self, **options: Any) -> AsyncSession:
        return AsyncSession(self, **options)

    async def iter_rewards(self, page: int = 500, **filters: Any) -> AsyncIterator[m.RewardOut]:
        after = 0
        while True:
            got: m.RewardPageOut = await self.do(calls.rewards(after, page, **filters))
            for reward in got.rewards:
                yield reward
            if not got.rewards or got.next_after >= got.head:
                return
            after = got.next_after

    async def create_draft(self, name: str, document: str,
                           parent_version: int | None = None) -> m.ContractVersionOut:
        return await self.do(calls.create_draft(name, document, parent_version))

    async def publish(self, name: str, version: int) -> m.PublishedOut:
        return await self.do(calls.publish(name, version))

    async def adapters(self, specialist: str | None = None, limit: int = 100) -> list[m.RegistryAdapterOut]:
        return await self.do(calls.adapters(specialist, limit))

    async def adapter(self, adapter_id: str) -> m.RegistryAdapterOut:
        return await self.do(calls.adapter(adapter_id))

    async def lineage(self, adapter_id: str) -> m.LineageOut:
        return await self.do(calls.lineage(adapter_id))

    async def aliases(self, specialist: str) -> dict[str, m.AliasMoveOut]:
        return await self.do(calls.aliases(specialist))

    async def training_run(self, run_id: str) -> m.TrainingRunOut:
        return await self.do(calls.training_run(run_id))

    async def wait_for_run(self, run_id: str, timeout_s: float = 600.0,
                           poll_s: float = 1.0) -> m.TrainingRunOut:
        deadline = time.monotonic() + timeout_s
        while True:
            run = await self.training_run(run_id)
            if run.status in TERMINAL_RUN:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.status} after {timeout_s} s")
            await asyncio.sleep(poll_s)

    async def subscribe_webhook(self, url: str, event_types: list[str], secret: str,
                                tenant: str | None = None, description: str = "") -> m.WebhookOut:
        return await self.do(calls.subscribe(url, event_types, secret, tenant, description))

    async def unsubscribe_webhook(self, subscription_id: str) -> m.WebhookOut:
        return await self.do(calls.unsubscribe(subscription_id))

    async def webhook_deliveries(self, subscription_id: str, limit: int = 100) -> list[m.DeliveryOut]:
        return (await self.do(calls.webhook_deliveries(subscription_id, limit))).deliveries
