"""Contract versions against the ``contract.*`` events of their stream, and the serving
moves (which version a harness runs, per specialist) against ``contract.serving_moved``.

The projection is replayed from the log (draft_created, draft_edited, published,
retired) and compared field by field; the stored document must also still hash to its
content hash (a published contract's text changed in place shows twice).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from audit.report import Findings
from contract.document import ContractInvalid, content_hash, parse_contract
from events.model import RecordedEvent

CONTRACT_TYPES = ("contract.draft_created", "contract.draft_edited", "contract.published",
                  "contract.retired")
SERVING_TYPE = "contract.serving_moved"
STATUS_AFTER = {"contract.draft_created": "draft", "contract.draft_edited": "draft",
                "contract.published": "published", "contract.retired": "retired"}


@dataclass(frozen=True)
class Replayed:
    status: str
    document: str
    content_hash: str
    parent_version: int | None
    created_by: str | None
    published_by: str | None
    last_position: int


def document_hash(document: str) -> str:
    return content_hash(parse_contract(document))


def replay(events: Iterable[RecordedEvent], findings: Findings) -> dict[tuple[str, int], Replayed]:
    """Each version's state as the log says it; log-internal contradictions are findings."""
    state: dict[tuple[str, int], Replayed] = {}
    for e in sorted(events, key=lambda ev: ev.position):
        p = e.payload
        key, kind = (p["name"], int(p["version"])), e.type
        now = state.get(key)
        if kind == "contract.draft_created":
            state[key] = Replayed("draft", p["document"], p["content_hash"], p.get("parent_version"),
                                  e.metadata.actor, None, e.position)
            continue
        if now is None:
            findings.add(f"event {e.position}", f"{kind} for {key[0]}@{key[1]}, which no draft_created began")
            continue
        if kind == "contract.draft_edited":
            now = replace(now, document=p["document"], content_hash=p["content_hash"])
        elif p.get("content_hash") != now.content_hash:
            findings.add(f"event {e.position}", f"{kind} names content hash {p.get('content_hash')}, the "
                                                f"drafts of {key[0]}@{key[1]} ended at {now.content_hash}")
        if kind == "contract.published":
            now = replace(now, published_by=e.metadata.actor)
        state[key] = replace(now, status=STATUS_AFTER[kind], last_position=e.position)
    return state


def check_contract_versions(findings: Findings, rows: list[dict[str, Any]], events: list[RecordedEvent],
                            hash_of: Callable[[str], str] = document_hash) -> dict[tuple[str, int], str]:
    """Compare every row with its replayed events; return the content hash of each version
    *as the log has it* (what the reward check holds rewards' contract hashes against)."""
    replayed = replay(events, findings)
    for row in rows:
        findings.checked += 1
        key = (row["name"], int(row["version"]))
        ref = f"{key[0]}@{key[1]}"
        logged = replayed.get(key)
        if logged is None:
            findings.add(ref, "no contract.draft_created event created this version")
            continue
        findings.differ(ref, f"the contract.* events (last at position {logged.last_position})", {
            "status": (row["status"], logged.status), "document": (row["document"], logged.document),
            "content_hash": (row["content_hash"], logged.content_hash),
            "parent_version": (row["parent_version"], logged.parent_version),
            "created_by": (row["created_by"], logged.created_by),
            "published_by": (row["published_by"], logged.published_by),
            "last_event_position": (row["last_event_position"], logged.last_position)})
        _check_document_hash(findings, ref, row, hash_of)
    stored = {(r["name"], int(r["version"])) for r in rows}
    for (name, version), logged in replayed.items():
        if (name, version) not in stored:
            findings.add(f"{name}@{version}", f"the row is missing; the log has it up to position "
                                              f"{logged.last_position}")
    return {key: logged.content_hash for key, logged in replayed.items()}


def _check_document_hash(findings: Findings, ref: str, row: dict[str, Any],
                         hash_of: Callable[[str], str] = document_hash) -> None:
    try:
        rehashed = hash_of(row["document"])
    except (ContractInvalid, ValueError) as exc:  # edited in place, it may no longer parse
        findings.add(ref, f"the stored document no longer parses: {str(exc)[:120]}")
        return
    if rehashed != row["content_hash"]:
        findings.add(ref, f"the stored document hashes to {rehashed[:12]}…, not to its content_hash "
                          f"{row['content_hash'][:12]}…")


def check_serving_moves(findings: Findings, rows: list[dict[str, Any]], events: list[RecordedEvent]) -> None:
    """Each serving move against its event (same position), and the log against itself:
    a move's ``previous_version`` is what the move before it served."""
    def compare(row: dict[str, Any], event: RecordedEvent) -> dict[str, tuple[Any, Any]]:
        p = event.payload
        return {"name": (row["name"], p["name"]), "specialist": (row["specialist"], p["specialist"]),
                "version": (row["version"], p["version"]),
                "previous_version": (row["previous_version"], p["previous_version"]),
                "actor": (row["actor"], event.metadata.actor), "reason": (row["reason"], p["reason"]),
                "moved_at": (row["moved_at"], event.recorded_at)}

    findings.by_position("serving move", rows, events, compare)
    serving: dict[tuple[str, str], int | None] = {}
    for event in sorted(events, key=lambda e: e.position):
        p = event.payload
        key = (p["name"], p["specialist"])
        before = serving.get(key)
        if p["previous_version"] != before:
            findings.add(f"serving move at position {event.position}",
                         f"{key[0]}/{key[1]} says it replaced version {p['previous_version']!r}, but "
                         f"the move before it served {before!r}")
        serving[key] = p["version"]
