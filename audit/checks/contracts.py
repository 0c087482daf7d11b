"""Contract versions beyond their projection: what the log must agree with itself on.

The rows are the projection of the ``contract.*`` events (``contract.projections``,
compared by the projections' check). What that cannot see is checked here: a stored
document must still parse and hash to its content hash (a published text changed in
place, with its hash changed to match, shows twice), and every serving move replaced the
version the move before it set.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from audit.report import Findings
from contract.document import ContractInvalid, content_hash, parse_contract
from contract.events import DraftCreated, DraftEdited, Published, Retired, ServingMoved
from events.model import RecordedEvent

CONTRACT_TYPES = tuple(cls.TYPE for cls in (DraftCreated, DraftEdited, Published, Retired))
SERVING_TYPE = ServingMoved.TYPE
_DOCUMENT_TYPES = (DraftCreated.TYPE, DraftEdited.TYPE)


def document_hash(document: str) -> str:
    return content_hash(parse_contract(document))


def logged_hashes(events: Iterable[RecordedEvent]) -> dict[tuple[str, int], str]:
    """Each version's content hash as its latest draft event has it: what rewards' contract
    hashes are held to."""
    hashes: dict[tuple[str, int], str] = {}
    for event in sorted(events, key=lambda e: e.position):
        if event.type in _DOCUMENT_TYPES:
            hashes[(event.payload["name"], int(event.payload["version"]))] = event.payload["content_hash"]
    return hashes


def check_documents(findings: Findings, rows: list[dict[str, Any]],
                    hash_of: Callable[[str], str] = document_hash) -> None:
    """Every stored document still parses and hashes to its row's content hash."""
    for row in rows:
        findings.checked += 1
        ref = f"contract_versions name={row['name']}, version={row['version']}"
        try:
            rehashed = hash_of(row["document"])
        except (ContractInvalid, ValueError) as exc:  # edited in place, it may no longer parse
            findings.add(ref, f"the stored document no longer parses: {str(exc)[:120]}")
            continue
        if rehashed != row["content_hash"]:
            findings.add(ref, f"the stored document hashes to {rehashed[:12]}…, not to its content_hash "
                              f"{row['content_hash'][:12]}…")


def check_serving_chain(findings: Findings, events: list[RecordedEvent]) -> None:
    """The log against itself: a move's ``previous_version`` is what the move before served."""
    serving: dict[tuple[str, str], int | None] = {}
    for event in sorted(events, key=lambda e: e.position):
        findings.checked += 1
        p = event.payload
        key = (p["name"], p["specialist"])
        before = serving.get(key)
        if p["previous_version"] != before:
            findings.add(f"serving move at position {event.position}",
                         f"{key[0]}/{key[1]} says it replaced version {p['previous_version']!r}, but "
                         f"the move before it served {before!r}")
        serving[key] = p["version"]
