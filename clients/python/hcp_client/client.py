"""The synchronous client. ``Client(base_url, api_key)``; every method is one call of
``hcp_client.calls`` (or a page loop over one), answered as the API's own models."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from hcp_client import calls
from hcp_client import models as m
from hcp_client.downloads import unpack_verified
from hcp_client.sessions import Session
from hcp_client.transport import Retry, headers_of, send

TERMINAL_RUN = ("succeeded", "failed")


class Client:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30.0,
                 retry: Retry | None = None, transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url, headers=headers_of(api_key), timeout=timeout,
                                 transport=transport)
        self.retry = retry or Retry()

    def do(self, call: calls.Call) -> Any:
        answer = send(self.http, self.retry, call.method, call.path, params=call.params, json=call.json)
        return call.parse(answer.json())

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- the log -------------------------------------------------------------------------
    def health(self) -> m.HealthOut:
        return self.do(calls.health())

    def append(self, events: list[Any]) -> m.AppendedBatchOut:
        return self.do(calls.append(events))

    def event(self, event_id: str) -> m.RecordedEventOut:
        return self.do(calls.event(event_id))

    def iter_events(self, after: int = 0, page: int = 500) -> Iterator[m.RecordedEventOut]:
        """The feed from ``after`` on, page by page, until the head."""
        while True:
            got: m.EventPage = self.do(calls.feed(after, page))
            yield from got.events
            if not got.events or got.next_after >= got.head:
                return
            after = got.next_after

    def iter_stream(self, stream_id: str, page: int = 1000) -> Iterator[m.RecordedEventOut]:
        after = 0
        while True:
            got: m.EventPage = self.do(calls.stream(stream_id, after, page))
            yield from got.events
            if len(got.events) < 1 or got.next_after == after:
                return
            after = got.next_after

    def session(self, **options: Any) -> Session:
        """A session to write (``stream_id``, ``tenant``, ``specialist``, ``harness``)."""
        return Session(self, **options)

    # --- contracts and rewards -----------------------------------------------------------
    def contracts(self, name: str | None = None,
                  status: str | None = None) -> list[m.ContractVersionSummaryOut]:
        return self.do(calls.contracts(name, status))

    def contract_version(self, name: str, version: int) -> m.ContractVersionOut:
        return self.do(calls.contract_version(name, version))

    def create_draft(self, name: str, document: str,
                     parent_version: int | None = None) -> m.ContractVersionOut:
        return self.do(calls.create_draft(name, document, parent_version))

    def publish(self, name: str, version: int) -> m.PublishedOut:
        return self.do(calls.publish(name, version))

    def iter_rewards(self, page: int = 500, **filters: Any) -> Iterator[m.RewardOut]:
        """Rewards matching ``filters`` (contract, version, stream_id, specialist, eligible …)."""
        after = 0
        while True:
            got: m.RewardPageOut = self.do(calls.rewards(after, page, **filters))
            yield from got.rewards
            if not got.rewards or got.next_after >= got.head:
                return
            after = got.next_after

    def reward(self, reward_id: str) -> m.RewardOut:
        return self.do(calls.reward(reward_id))

    # --- the registry --------------------------------------------------------------------
    def adapters(self, specialist: str | None = None, limit: int = 100) -> list[m.RegistryAdapterOut]:
        return self.do(calls.adapters(specialist, limit))

    def adapter(self, adapter_id: str) -> m.RegistryAdapterOut:
        return self.do(calls.adapter(adapter_id))

    def lineage(self, adapter_id: str) -> m.LineageOut:
        return self.do(calls.lineage(adapter_id))

    def upstream(self, adapter_id: str) -> m.UpstreamOut:
        return self.do(calls.upstream(adapter_id))

    def aliases(self, specialist: str) -> dict[str, m.AliasMoveOut]:
        return self.do(calls.aliases(specialist))

    def alias(self, specialist: str, name: str, at: str | None = None) -> m.AliasPointerOut:
        return self.do(calls.alias(specialist, name, at))

    def move_alias(self, specialist: str, name: str, adapter_id: str, reason: str) -> m.AliasMoveOut:
        return self.do(calls.move_alias(specialist, name, adapter_id, reason))

    def training_run(self, run_id: str) -> m.TrainingRunOut:
        return self.do(calls.training_run(run_id))

    def wait_for_run(self, run_id: str, timeout_s: float = 600.0, poll_s: float = 1.0) -> m.TrainingRunOut:
        """The run once it succeeded or failed; TimeoutError if it has not by ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            run = self.training_run(run_id)
            if run.status in TERMINAL_RUN:
                return run
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run_id} is still {run.status} after {timeout_s} s")
            time.sleep(poll_s)

    def download_adapter(self, adapter_id: str, dest: Path) -> Path:
        """The adapter's artifact unpacked under ``dest``, every hash checked."""
        listing = self.do(calls.adapter_files(adapter_id))
        answer = send(self.http, self.retry, "GET", f"/v1/adapters/{calls.q(adapter_id)}/artifact")
        return unpack_verified(answer.content, answer.headers, listing, Path(dest))

    def download_base_model(self, name: str, dest: Path) -> Path:
        """The base model unpacked as ``dest/<name>``, every hash checked."""
        listing = self.do(calls.base_model_files(name))
        answer = send(self.http, self.retry, "GET", f"/v1/base-models/{calls.q(name)}/artifact")
        return unpack_verified(answer.content, answer.headers, listing, Path(dest))

    # --- webhooks ------------------------------------------------------------------------
    def subscribe_webhook(self, url: str, event_types: list[str], secret: str,
                          tenant: str | None = None, description: str = "") -> m.WebhookOut:
        return self.do(calls.subscribe(url, event_types, secret, tenant, description))

    def unsubscribe_webhook(self, subscription_id: str) -> m.WebhookOut:
        """Stop deliveries to a subscription (it stays listed, deleted)."""
        return self.do(calls.unsubscribe(subscription_id))

    def webhooks(self) -> list[m.WebhookOut]:
        return self.do(calls.webhooks()).webhooks

    def webhook_deliveries(self, subscription_id: str, limit: int = 100) -> list[m.DeliveryOut]:
        return self.do(calls.webhook_deliveries(subscription_id, limit)).deliveries

    def redeliver(self, subscription_id: str, delivery_id: str) -> m.DeliveryOut:
        return self.do(calls.redeliver(subscription_id, delivery_id))
