"""Contract versions in the log: drafts, edits, publishing, retiring and serving moves,
each on stream ``contract:<name>``. Pure.

Version 2 of the four version events: the row takes its times from the event (version 1
writers stamped it from their own clock, a moment before the event).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from events.server_events import ServerEvent


def _same(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


class _VersionEvent(ServerEvent):
    name: str
    version: int


class DraftCreated(_VersionEvent):
    TYPE = "contract.draft_created"
    VERSION = 2
    SUMMARY = "A draft contract version was created (from a parent version, or new)"
    UPCASTERS = {1: _same}

    parent_version: int | None
    content_hash: str
    document: str = Field(description="The TOML exactly as written")


class DraftEdited(_VersionEvent):
    TYPE = "contract.draft_edited"
    VERSION = 2
    SUMMARY = "A draft's document was replaced"
    UPCASTERS = {1: _same}

    content_hash: str
    document: str


class Published(_VersionEvent):
    TYPE = "contract.published"
    VERSION = 2
    SUMMARY = "A draft was published: frozen, and scoring every new subject"
    UPCASTERS = {1: lambda p: {"check": None, "forced": None, **p}}

    content_hash: str
    check: dict[str, Any] | None = Field(description="The publish check's figures")
    forced: str | None = Field(description="Why a failed publish check was overridden")


class Retired(_VersionEvent):
    TYPE = "contract.retired"
    VERSION = 2
    SUMMARY = "A published version stopped scoring"
    UPCASTERS = {1: _same}

    content_hash: str
    reason: str


class ServingMoved(ServerEvent):
    TYPE = "contract.serving_moved"
    SUMMARY = "Which published version a harness runs for a specialist changed"

    name: str
    version: int | None = Field(description="None: from here on no version serves the specialist")
    specialist: str
    previous_version: int | None
    reason: str
