"""Signed notes (C2SP signed-note, as golang.org/x/mod/sumdb/note writes and reads them).

A signed note is a text ending in a newline, a blank line, then signature lines
``— <key name> <base64(4-byte big-endian key id || Ed25519 signature of the text)>``.
Verification follows the spec: signatures by unknown keys are ignored, a known key's
signature that fails rejects the whole note, and a note no known key signed is refused.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

from audit.keys import KeyFormatError, SigningKey, VerifierKey, check_key_name, strict_b64decode

SIG_PREFIX = "\u2014 "  # em dash, space
MAX_SIGNATURES = 100  # what the Go reader accepts; the spec asks for at least 16


class NoteError(ValueError):
    """A note that is malformed, or whose signatures do not check out."""


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: int
    signature: bytes

    def line(self) -> str:
        blob = self.key_id.to_bytes(4, "big") + self.signature
        return f"{SIG_PREFIX}{self.name} {base64.b64encode(blob).decode()}\n"


@dataclass(frozen=True)
class Note:
    """A note's text and signatures as parsed; ``verified`` only from ``open_note``."""

    text: str
    signatures: tuple[NoteSignature, ...]
    verified: tuple[NoteSignature, ...] = ()


def sign_note(text: str, *keys: SigningKey) -> str:
    """The signed note: ``text`` (which must end in a newline), a blank line, one line per key."""
    _check_characters(text)
    if not text.endswith("\n"):
        raise NoteError("a note's text must end with a newline")
    if not keys:
        raise NoteError("a signed note needs at least one key")
    message = text.encode()
    lines = (NoteSignature(k.name, k.key_id, k.sign(message)).line() for k in keys)
    return text + "\n" + "".join(lines)


def parse_note(message: str | bytes) -> Note:
    """Split a signed note into text and signature lines, checking the syntax only."""
    if isinstance(message, bytes):
        try:
            message = message.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NoteError("note is not valid UTF-8") from exc
    _check_characters(message)
    split = message.rfind("\n\n")
    if split < 0:
        raise NoteError("note has no blank line before its signatures")
    text, block = message[:split + 1], message[split + 2:]
    if not block.endswith("\n"):
        raise NoteError("note has no signature lines, or its last line does not end with a newline")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"note has more than {MAX_SIGNATURES} signatures")
    return Note(text, tuple(_parse_signature(line) for line in lines))


def open_note(message: str | bytes, verifiers: Sequence[VerifierKey]) -> Note:
    """Parse a note and check it against the known keys; raise NoteError unless one signed it."""
    note = parse_note(message)
    known = _by_name_and_id(verifiers)
    verified: dict[tuple[str, int], NoteSignature] = {}
    for sig in note.signatures:
        key = known.get((sig.name, sig.key_id))
        if key is None or (sig.name, sig.key_id) in verified:
            continue  # an unknown key (maybe a witness, or a rotated key), or a repeat
        if not key.verify(note.text.encode(), sig.signature):
            raise NoteError(f"invalid signature for key {sig.name}+{sig.key_id:08x}")
        verified[(sig.name, sig.key_id)] = sig
    if not verified:
        names = ", ".join(f"{v.name}+{v.key_id:08x}" for v in verifiers) or "none given"
        raise NoteError(f"note is not signed by any known key ({names})")
    return Note(note.text, note.signatures, tuple(verified.values()))


def _check_characters(message: str) -> None:
    bad = next((c for c in message if (ord(c) < 0x20 and c != "\n") or c == "\x7f"), None)
    if bad is not None:
        raise NoteError(f"note contains the control character {bad!r}")


def _parse_signature(line: str) -> NoteSignature:
    if not line.startswith(SIG_PREFIX):
        raise NoteError(f"signature line does not start with an em dash and a space: {line[:40]!r}")
    name, _, sig64 = line[len(SIG_PREFIX):].partition(" ")
    try:
        check_key_name(name)
        raw = strict_b64decode(sig64, "signature")
    except KeyFormatError as exc:
        raise NoteError(f"malformed signature line: {exc}") from exc
    if len(raw) < 5:
        raise NoteError("signature is shorter than a key id and one byte")
    return NoteSignature(name, int.from_bytes(raw[:4], "big"), raw[4:])


def _by_name_and_id(verifiers: Sequence[VerifierKey]) -> dict[tuple[str, int], VerifierKey]:
    known: dict[tuple[str, int], VerifierKey] = {}
    for v in verifiers:
        if known.setdefault((v.name, v.key_id), v) != v:
            raise NoteError(f"two different keys share the name and id {v.name}+{v.key_id:08x}")
    return known
