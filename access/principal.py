"""The principal an API key names: who it is, what it may do, and for which tenant."""

from __future__ import annotations

from dataclasses import dataclass

from events.ingest import Author

SCOPES = (
    "admin",
    "events:write", "events:read", "audit:read", "audit:write",
    "contracts:write", "contracts:read", "rewards:read",
    "registry:read", "registry:write", "train:write", "lineage:read",
    "chat:write",  # POST /v1/chat/completions, /v1/feedback, GET /v1/models (docs/serving.md)
    "metrics:read",  # GET /metrics: the whole process's series (operators only)
    "webhooks:read", "webhooks:write",  # /v1/webhooks (docs/integrations.md)
)


@dataclass(frozen=True)
class Principal:
    key_id: str
    scopes: frozenset[str]
    label: str | None
    tenant: str | None = None  # None: an operator key, for every tenant

    @property
    def actor(self) -> str:
        """How changes made with this key are attributed in the log (labels are unique)."""
        return f"key:{self.label or self.key_id}"

    @property
    def operator(self) -> bool:
        """An operator key acts for every tenant; only operators change shared state
        (contracts, the registry, training) and read what spans tenants."""
        return self.tenant is None

    @property
    def author(self) -> Author:
        """What ingest stamps on the events this key writes."""
        return Author(self.actor, self.tenant)

    def allows(self, scope: str) -> bool:
        return "admin" in self.scopes or scope in self.scopes
