"""Errors of the lineage queries: a refused request names the field at fault."""

from __future__ import annotations

from kernel.errors import Invalid


class LineageInvalid(Invalid):
    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def invalid(message: str, field: str) -> LineageInvalid:
    """An ``Invalid`` (HTTP 422) that names ``field`` in the error body."""
    return LineageInvalid(message, field)
