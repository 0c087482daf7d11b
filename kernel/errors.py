"""The base errors of every package; the API maps each family to one HTTP status.

A package raises its own subclass (``VersionNotFound``, ``EventIdConflict`` ...) so its
callers can be specific, and the API needs only these four families (plus ``code``,
the machine-readable name in the error body) to answer consistently.
"""

from __future__ import annotations


class DomainError(Exception):
    """A request the domain refuses; ``code`` names the kind in API error bodies."""

    code = "error"
    field: str | None = None


class NotFound(DomainError, LookupError):
    """The named thing does not exist (HTTP 404)."""

    code = "not_found"


class Conflict(DomainError):
    """The change contradicts what is stored, or the thing's state (HTTP 409)."""

    code = "conflict"


class Forbidden(DomainError):
    """The caller may not do this to this thing, whatever its scopes (HTTP 403): e.g. a
    tenant's key writing to another tenant's stream, or an operator-only change."""

    code = "forbidden"


class Invalid(DomainError, ValueError):
    """The request cannot be carried out as asked (HTTP 422)."""

    code = "invalid_request"


class Unavailable(DomainError):
    """The request cannot be served now; a later try may succeed (HTTP 503)."""

    code = "unavailable"
