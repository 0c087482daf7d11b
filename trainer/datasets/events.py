"""A dataset manifest frozen, in the log (``dataset.frozen``, on the specialist's stream).

The event lists the rewards whose examples the manifest holds (ids, in manifest order),
its cut, its examples' hash and its content hash. Everything else the manifest's rows
hold (each reward's subject, session, split and contract version) is in those reward
records, which are chained: the projector derives it from them and must arrive at the
content hash the event froze. Pure.
"""

from __future__ import annotations

from pydantic import Field

from events.server_events import ServerEvent


class DatasetFrozen(ServerEvent):
    TYPE = "dataset.frozen"
    SUMMARY = "A dataset manifest was frozen: its rewards (ids, in order), cut and hashes"

    manifest_id: str
    specialist: str
    cut_from: int
    cut_to: int
    reward_ids: list[str] = Field(description="The rewards whose examples it holds, in order")
    examples_sha256: str
    content_hash: str
    frozen_at: str | None = Field(
        None, description="When it was frozen, for a manifest recorded after the fact (ISO 8601)")
