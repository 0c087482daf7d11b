"""Signed checkpoints of the log, in the transparency-log form (C2SP tlog-checkpoint).

The note text is the origin (the log's name), the tree size (= the last position), the
base64 Merkle root, then two extension lines of ours: the chain head (the hash of the
event at that position) and the signing time::

    hcp.example/events
    1000
    2m3c...base64...=
    chain-head 6b1f...64 hex...
    time 2026-12-01T10:00:00Z

    — hcp.example/events <base64(key id || Ed25519 signature)>

The signed note is the checkpoint: it is stored, published and exported verbatim, and an
auditor trusts only what ``open_checkpoint`` parsed out of a note their key verified.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from audit.keys import KeyFormatError, SigningKey, VerifierKey, check_key_name, strict_b64decode
from audit.merkle import HASH_SIZE
from audit.note import NoteError, open_note, sign_note

EXPORT_FORMAT = "hcp-audit-checkpoints/1"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_SIZE = re.compile(r"0|[1-9][0-9]*")
_CHAIN_HASH = re.compile(r"[0-9a-f]{64}")


class CheckpointError(ValueError):
    """A checkpoint that is malformed, unsigned by the expected key, or of another log."""


@dataclass(frozen=True)
class Checkpoint:
    """The log's state at one size. ``timestamp`` is kept in UTC, to the second."""

    origin: str
    size: int
    root: bytes
    chain_head: str
    timestamp: datetime

    def __post_init__(self) -> None:
        try:
            check_key_name(self.origin)  # the key name should be the origin, so same rules
        except KeyFormatError as exc:
            raise CheckpointError(f"invalid origin: {exc}") from exc
        if self.size < 0:
            raise CheckpointError(f"tree size {self.size} is negative")
        if len(self.root) != HASH_SIZE:
            raise CheckpointError(f"root hash is {len(self.root)} bytes, not {HASH_SIZE}")
        if not _CHAIN_HASH.fullmatch(self.chain_head):
            raise CheckpointError("chain head must be 64 lowercase hex characters")
        if self.timestamp.tzinfo is None:
            raise CheckpointError("checkpoint time must be timezone-aware")
        object.__setattr__(self, "timestamp", self.timestamp.astimezone(UTC).replace(microsecond=0))

    def text(self) -> str:
        """The note text that gets signed."""
        root64 = base64.b64encode(self.root).decode()
        when = self.timestamp.strftime(TIME_FORMAT)
        return f"{self.origin}\n{self.size}\n{root64}\nchain-head {self.chain_head}\ntime {when}\n"

    @classmethod
    def from_text(cls, text: str) -> Checkpoint:
        """Parse a checkpoint's note text, refusing anything but the exact form ``text`` writes."""
        lines = text.split("\n")
        if len(lines) != 6 or lines[-1] != "":
            raise CheckpointError("checkpoint text must be exactly five lines, each ending in a newline")
        origin, size, root64, head_line, time_line = lines[:5]
        if not _SIZE.fullmatch(size):
            raise CheckpointError(f"tree size {size!r} is not a decimal number without leading zeros")
        try:
            root = strict_b64decode(root64, "root hash")
        except KeyFormatError as exc:
            raise CheckpointError(str(exc)) from exc
        return cls(origin, int(size), root, _extension(head_line, "chain-head"),
                   _parse_time(_extension(time_line, "time")))


@dataclass(frozen=True)
class SignedCheckpoint:
    checkpoint: Checkpoint
    note: str  # the signed note, verbatim


def sign_checkpoint(checkpoint: Checkpoint, key: SigningKey) -> SignedCheckpoint:
    return SignedCheckpoint(checkpoint, sign_note(checkpoint.text(), key))


def open_checkpoint(note: str | bytes, verifier: VerifierKey, origin: str | None = None) -> SignedCheckpoint:
    """Verify a signed checkpoint with the log's public key and parse it.

    ``origin`` defaults to the key's name: a checkpoint of another log is refused even if
    it carries a valid signature, so checkpoints cannot be replayed across logs.
    """
    try:
        opened = open_note(note, [verifier])
    except NoteError as exc:
        raise CheckpointError(f"checkpoint signature: {exc}") from exc
    checkpoint = Checkpoint.from_text(opened.text)
    expected = verifier.name if origin is None else origin
    if checkpoint.origin != expected:
        raise CheckpointError(f"checkpoint is of the log {checkpoint.origin!r}, expected {expected!r}")
    text = note.decode() if isinstance(note, bytes) else note
    return SignedCheckpoint(checkpoint, text)


def export_json(checkpoints: Sequence[SignedCheckpoint], verifier: VerifierKey) -> str:
    """The file ``hcp audit checkpoint export`` writes: the notes, their fields for reading, the key."""
    entries = [_entry(s.checkpoint, s.note) for s in sorted(checkpoints, key=lambda s: s.checkpoint.size)]
    doc = {"format": EXPORT_FORMAT, "verifier_key": verifier.vkey(), "checkpoints": entries}
    return json.dumps(doc, indent=2) + "\n"


def load_checkpoints(data: str | bytes, verifier: VerifierKey) -> list[SignedCheckpoint]:
    """Checkpoints from an export file or a single signed note, each verified with ``verifier``.

    The key inside an export is informational; the auditor's own key decides, and a file
    naming another key is refused rather than silently checked against the wrong one.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise CheckpointError("checkpoint file is not valid UTF-8") from exc
    if not text.lstrip().startswith("{"):
        return [open_checkpoint(text, verifier)]
    doc = _json_object(text)
    if doc.get("format") != EXPORT_FORMAT:
        raise CheckpointError(f"not a checkpoint export (format {doc.get('format')!r}, want {EXPORT_FORMAT})")
    if doc.get("verifier_key") != verifier.vkey():
        raise CheckpointError(f"export is signed by {doc.get('verifier_key')!r}, not {verifier.vkey()!r}")
    entries = doc.get("checkpoints")
    if not isinstance(entries, list):
        raise CheckpointError("export has no list of checkpoints")
    return [_load_entry(entry, verifier) for entry in entries]


def _extension(line: str, key: str) -> str:
    name, _, value = line.partition(" ")
    if name != key or not value:
        raise CheckpointError(f"expected the extension line '{key} <value>', got {line[:80]!r}")
    return value


def _parse_time(value: str) -> datetime:
    try:
        parsed = datetime.strptime(value, TIME_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        parsed = None
    # strptime also takes unpadded fields ("2026-1-1..."): only the canonical spelling passes
    if parsed is None or parsed.strftime(TIME_FORMAT) != value:
        raise CheckpointError(f"time {value!r} is not of the form 2026-12-01T10:00:00Z")
    return parsed


def _entry(cp: Checkpoint, note: str) -> dict[str, Any]:
    return {"origin": cp.origin, "size": cp.size, "root": base64.b64encode(cp.root).decode(),
            "chain_head": cp.chain_head, "time": cp.timestamp.strftime(TIME_FORMAT), "note": note}


def _load_entry(entry: Any, verifier: VerifierKey) -> SignedCheckpoint:
    if not isinstance(entry, dict) or not isinstance(entry.get("note"), str):
        raise CheckpointError("every exported checkpoint needs its signed note")
    signed = open_checkpoint(entry["note"], verifier)
    if entry != _entry(signed.checkpoint, signed.note):
        raise CheckpointError(f"exported fields of checkpoint {signed.checkpoint.size} differ from its note")
    return signed


def _json_object(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"checkpoint export is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CheckpointError("checkpoint export is not a JSON object")
    return doc
