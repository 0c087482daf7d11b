"""Every call the clients make, as data: method, path, query, body and the model of the
answer. The sync and the async client send the same calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from hcp_client import models as m

Json = dict[str, Any]


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    model: type[BaseModel] | None = None
    params: Json | None = None
    json: Any = None
    shape: str = "one"  # one | list | map

    def parse(self, data: Any) -> Any:
        if self.model is None:
            return data
        if self.shape == "list":
            return [self.model.model_validate(item) for item in data]
        if self.shape == "map":
            return {key: self.model.model_validate(item) for key, item in data.items()}
        return self.model.model_validate(data)


def q(value: str) -> str:
    return quote(value, safe="")


def body(item: Any) -> Any:
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json", exclude_none=True, by_alias=True)
    return item


def given(**params: Any) -> Json:
    return {k: v for k, v in params.items() if v is not None}


def health() -> Call:
    return Call("GET", "/healthz", m.HealthOut)


def append(events: list[Any]) -> Call:
    return Call("POST", "/v1/events", m.AppendedBatchOut, json={"events": [body(e) for e in events]})


def event(event_id: str) -> Call:
    return Call("GET", f"/v1/events/{q(event_id)}", m.RecordedEventOut)


def feed(after: int, limit: int) -> Call:
    return Call("GET", "/v1/events", m.EventPage, params={"after": after, "limit": limit})


def stream(stream_id: str, after_seq: int, limit: int) -> Call:
    return Call("GET", f"/v1/streams/{q(stream_id)}", m.EventPage,
                params={"after_seq": after_seq, "limit": limit})


def rewards(after: int, limit: int, **filters: Any) -> Call:
    return Call("GET", "/v1/rewards", m.RewardPageOut, params=given(after=after, limit=limit, **filters))


def reward(reward_id: str) -> Call:
    return Call("GET", f"/v1/rewards/{q(reward_id)}", m.RewardOut)


def contracts(name: str | None = None, status: str | None = None) -> Call:
    return Call("GET", "/v1/contracts", m.ContractVersionSummaryOut, given(name=name, status=status),
                shape="list")


def contract_version(name: str, version: int) -> Call:
    return Call("GET", f"/v1/contracts/{q(name)}/versions/{version}", m.ContractVersionOut)


def create_draft(name: str, document: str, parent_version: int | None = None) -> Call:
    return Call("POST", f"/v1/contracts/{q(name)}/versions", m.ContractVersionOut,
                json=given(document=document, parent_version=parent_version))


def publish(name: str, version: int) -> Call:
    return Call("POST", f"/v1/contracts/{q(name)}/versions/{version}/publish", m.PublishedOut)


def adapters(specialist: str | None = None, limit: int = 100) -> Call:
    return Call("GET", "/v1/adapters", m.RegistryAdapterOut, given(specialist=specialist, limit=limit),
                shape="list")


def adapter(adapter_id: str) -> Call:
    return Call("GET", f"/v1/adapters/{q(adapter_id)}", m.RegistryAdapterOut)


def lineage(adapter_id: str) -> Call:
    return Call("GET", f"/v1/adapters/{q(adapter_id)}/lineage", m.LineageOut)


def upstream(adapter_id: str) -> Call:
    return Call("GET", f"/v1/lineage/adapters/{q(adapter_id)}", m.UpstreamOut)


def aliases(specialist: str) -> Call:
    return Call("GET", f"/v1/specialists/{q(specialist)}/aliases", m.AliasMoveOut, shape="map")


def alias(specialist: str, name: str, at: str | None = None) -> Call:
    return Call("GET", f"/v1/specialists/{q(specialist)}/aliases/{q(name)}", m.AliasPointerOut,
                given(at=at))


def move_alias(specialist: str, name: str, adapter_id: str, reason: str) -> Call:
    return Call("PUT", f"/v1/specialists/{q(specialist)}/aliases/{q(name)}", m.AliasMoveOut,
                json={"adapter_id": adapter_id, "reason": reason})


def training_run(run_id: str) -> Call:
    return Call("GET", f"/v1/training-runs/{q(run_id)}", m.TrainingRunOut)


def adapter_files(adapter_id: str) -> Call:
    return Call("GET", f"/v1/adapters/{q(adapter_id)}/files", m.ArtifactFilesOut)


def base_model_files(name: str) -> Call:
    return Call("GET", f"/v1/base-models/{q(name)}/files", m.BaseModelFilesOut)


def subscribe(url: str, event_types: list[str], secret: str, tenant: str | None = None,
              description: str = "") -> Call:
    return Call("POST", "/v1/webhooks", m.WebhookOut, json=given(
        url=url, event_types=event_types, secret=secret, tenant=tenant, description=description))


def webhooks() -> Call:
    return Call("GET", "/v1/webhooks", m.WebhookList)


def unsubscribe(subscription_id: str) -> Call:
    return Call("DELETE", f"/v1/webhooks/{q(subscription_id)}", m.WebhookOut)


def webhook_deliveries(subscription_id: str, limit: int = 100) -> Call:
    return Call("GET", f"/v1/webhooks/{q(subscription_id)}/deliveries", m.DeliveryPage,
                {"limit": limit})


def redeliver(subscription_id: str, delivery_id: str) -> Call:
    return Call("POST", f"/v1/webhooks/{q(subscription_id)}/deliveries/{q(delivery_id)}/redeliver",
                m.DeliveryOut)
