"""Frozen value objects that serialise themselves to JSON (datetimes as ISO 8601)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any


def json_ready(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    return value


class JsonValue:
    """Mixin for frozen dataclasses: ``to_json`` gives every field, JSON-ready."""

    def to_json(self) -> dict[str, Any]:
        return {k: json_ready(v) for k, v in asdict(self).items()}  # type: ignore[call-overload]
