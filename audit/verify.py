"""What an auditor runs offline, with only the log's public key (the verifier key).

* an inclusion bundle: this event hash is leaf ``index`` of the tree a signed checkpoint
  commits to (what ``GET /v1/audit/proof/{event_id}`` returns);
* a consistency bundle: an older signed checkpoint's tree is a prefix of a newer one's;
* a log against kept checkpoints: the events' chain hashes in position order still have,
  over their first N, the root each kept checkpoint signed (else the tail was truncated
  or the history rewritten).

Bundles travel as JSON: Merkle hashes in base64 (as in the checkpoint and in CT's
JSON API), event chain hashes in hex (as everywhere else in this project).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from audit.checkpoints import Checkpoint, open_checkpoint
from audit.keys import KeyFormatError, VerifierKey, strict_b64decode
from audit.merkle import ProofError, chain_leaf, leaf_hash, verify_consistency, verify_inclusion
from audit.tree import CompactRange


class AuditError(ValueError):
    """A bundle that is malformed or does not verify; the message says what failed."""


@dataclass(frozen=True)
class InclusionBundle:
    event_hash: str  # the event's chain hash (hex); the leaf is its 32 bytes
    leaf_index: int  # position - 1
    checkpoint: str  # signed note
    proof: tuple[bytes, ...]

    def to_json(self) -> dict[str, Any]:
        return {"event_hash": self.event_hash, "leaf_index": self.leaf_index,
                "checkpoint": self.checkpoint, "proof": _b64_list(self.proof)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> InclusionBundle:
        return cls(_field(doc, "event_hash", str), _field(doc, "leaf_index", int),
                   _field(doc, "checkpoint", str), _hashes(_field(doc, "proof", list)))


@dataclass(frozen=True)
class ConsistencyBundle:
    old_checkpoint: str  # signed notes
    new_checkpoint: str
    proof: tuple[bytes, ...]

    def to_json(self) -> dict[str, Any]:
        return {"old_checkpoint": self.old_checkpoint, "new_checkpoint": self.new_checkpoint,
                "proof": _b64_list(self.proof)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ConsistencyBundle:
        return cls(_field(doc, "old_checkpoint", str), _field(doc, "new_checkpoint", str),
                   _hashes(_field(doc, "proof", list)))


def verify_inclusion_bundle(bundle: InclusionBundle, verifier: VerifierKey) -> Checkpoint:
    """Return the checkpoint the event is proven in.

    Raises CheckpointError for a checkpoint the key did not sign (or of another log), and
    AuditError for a proof that does not lead from the event to the checkpoint's root.
    """
    checkpoint = open_checkpoint(bundle.checkpoint, verifier).checkpoint
    try:
        leaf = leaf_hash(chain_leaf(bundle.event_hash))
        verify_inclusion(leaf, bundle.leaf_index, checkpoint.size, bundle.proof, checkpoint.root)
    except (ProofError, ValueError) as exc:
        raise AuditError(f"event at position {bundle.leaf_index + 1} is not proven in the log "
                         f"of size {checkpoint.size}: {exc}") from exc
    return checkpoint


def verify_consistency_bundle(bundle: ConsistencyBundle,
                              verifier: VerifierKey) -> tuple[Checkpoint, Checkpoint]:
    """Return (old, new) once both signatures hold and the old tree is a prefix of the new.

    Raises CheckpointError or AuditError as ``verify_inclusion_bundle`` does.
    """
    old = open_checkpoint(bundle.old_checkpoint, verifier).checkpoint
    new = open_checkpoint(bundle.new_checkpoint, verifier).checkpoint
    try:
        verify_consistency(old.size, new.size, bundle.proof, old.root, new.root)
    except ProofError as exc:
        raise AuditError(f"log of size {new.size} does not extend the checkpoint of size {old.size}: "
                         f"{exc}") from exc
    return old, new


Verdict = Literal["consistent", "truncated", "rewritten"]


@dataclass(frozen=True)
class LogCheck:
    verdict: Verdict
    checkpoint: Checkpoint
    log_size: int
    detail: str

    @property
    def ok(self) -> bool:
        return self.verdict == "consistent"


def check_log(chain_hashes: Iterable[str], kept: Sequence[Checkpoint]) -> list[LogCheck]:
    """Compare the log with every kept checkpoint, in one pass and O(log n) memory.

    ``chain_hashes`` are the events' hashes in position order from position 1. The
    checkpoints' signatures must already be verified (``load_checkpoints``).
    """
    roots = Roots({c.size for c in kept})
    for chain_hash in chain_hashes:
        roots.add(chain_hash)
    return roots.judge(kept)


class Roots:
    """The Merkle root (and chain head) of a log at each of ``sizes``, its chain hashes
    added one at a time in position order: one pass, O(log n) memory."""

    def __init__(self, sizes: Iterable[int]) -> None:
        self.wanted, self.compact = set(sizes), CompactRange()
        self.seen: dict[int, tuple[bytes, str]] = {0: (self.compact.root(), "")} if 0 in self.wanted else {}

    @property
    def size(self) -> int:
        return self.compact.size

    def add(self, chain_hash: str) -> None:
        self.compact.append(chain_leaf(chain_hash))
        if self.compact.size in self.wanted:
            self.seen[self.compact.size] = (self.compact.root(), chain_hash)

    def root(self, size: int) -> bytes | None:
        found = self.seen.get(size)
        return found[0] if found else None

    def judge(self, kept: Sequence[Checkpoint]) -> list[LogCheck]:
        """Each kept checkpoint against the log as added so far."""
        return [_judge(c, self.compact.size, self.seen.get(c.size)) for c in kept]


def _judge(kept: Checkpoint, log_size: int, state: tuple[bytes, str] | None) -> LogCheck:
    when = kept.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    if state is None:
        return LogCheck("truncated", kept, log_size,
                        f"the log has {log_size} events but the checkpoint of {when} signed {kept.size}: "
                        f"positions {log_size + 1}..{kept.size} are gone")
    root, head = state
    if root != kept.root:
        return LogCheck("rewritten", kept, log_size,
                        f"the first {kept.size} events have a Merkle root other than the one signed at "
                        f"{when}: history up to position {kept.size} was rewritten")
    if kept.size and head != kept.chain_head:
        return LogCheck("rewritten", kept, log_size,
                        f"the Merkle root matches the checkpoint of {when} but its chain head "
                        f"{kept.chain_head[:12]}... is not the hash at position {kept.size}")
    return LogCheck("consistent", kept, log_size,
                    f"the first {kept.size} events match the checkpoint of {when}; the log has {log_size}")


def _b64_list(hashes: Sequence[bytes]) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]


def _hashes(values: list[Any]) -> tuple[bytes, ...]:
    out = []
    for value in values:
        if not isinstance(value, str):
            raise AuditError(f"proof element {value!r} is not a base64 string")
        try:
            out.append(strict_b64decode(value, "proof element"))
        except KeyFormatError as exc:
            raise AuditError(str(exc)) from exc
    return tuple(out)


def _field(doc: Mapping[str, Any], name: str, kind: type) -> Any:
    value = doc.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise AuditError(f"bundle field {name!r} must be a {kind.__name__}")
    return value
