"""What the server refused, as the one error body of the API says it."""

from __future__ import annotations

from typing import Any


class HcpError(Exception):
    """A 4xx or 5xx answer: ``status``, the body's ``code``, ``message`` and ``field``."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 body: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" ({field})" if field else ""))
        self.status, self.code, self.message, self.field, self.body = status, code, message, field, body


class ArtifactMismatch(HcpError):
    """A downloaded artifact does not hash to what the server said it is."""

    def __init__(self, message: str) -> None:
        super().__init__(0, "artifact_mismatch", message)


def error_of(status: int, body: Any) -> HcpError:
    detail = body.get("error") if isinstance(body, dict) else None
    if isinstance(detail, dict):
        return HcpError(status, str(detail.get("code", "error")), str(detail.get("message", "")),
                        detail.get("field"), body)
    return HcpError(status, "error", str(body)[:500], None, body)
