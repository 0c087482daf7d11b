"""Body of /healthz: each dependency's state."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from api.schemas.common import Out


class DependencyOut(Out):
    status: Literal["ok", "down"]
    latency_ms: float
    error: str | None = Field(description="Why it is down")


class HealthOut(Out):
    status: Literal["ok", "unavailable"] = Field(description="unavailable (503) when any check is down")
    mode: Literal["embedded", "services"]
    checks: dict[str, DependencyOut] = Field(
        description="database always; kafka and redis when configured; chat once a chat "
        "request has started its backend (/livez: chat only)")
