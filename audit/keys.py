"""Ed25519 keys for signed notes, in the encodings an operator and an auditor exchange.

Key names and key ids follow C2SP signed-note (golang.org/x/mod/sumdb/note):
``key id = SHA-256(name || "\\n" || 0x01 || 32-byte public key)[:4]``, big-endian.

* verifier key (what an auditor pins): ``name+<8 hex key id>+base64(0x01 || public key)``,
  or a PEM SubjectPublicKeyInfo, or an OpenSSH ``ssh-ed25519`` line (the name given apart);
* signing key (the server's secret): ``PRIVATE+KEY+name+<key id>+base64(0x01 || seed)``
  (the Go tool's format), or an unencrypted PKCS#8 PEM or OpenSSH private key file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

ALG_ED25519 = 0x01
KEY_SIZE = 32
_KEY_ID = re.compile(r"[0-9a-f]{8}")


class KeyFormatError(ValueError):
    """A key, key name or key encoding that cannot be used; the message says why."""


def check_key_name(name: str) -> str:
    """Names are non-empty, with no Unicode space, no '+' and no control character."""
    if not name or "+" in name or any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in name):
        raise KeyFormatError(f"invalid key name {name!r}: it must be non-empty, without spaces or '+'")
    return name


def key_id(name: str, public_key: bytes) -> int:
    digest = hashlib.sha256(name.encode() + b"\n" + bytes([ALG_ED25519]) + public_key).digest()
    return int.from_bytes(digest[:4], "big")


def strict_b64decode(text: str, what: str) -> bytes:
    """Standard base64 with padding, in its one canonical spelling only."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KeyFormatError(f"{what} is not valid base64") from exc
    if base64.b64encode(raw).decode() != text:
        raise KeyFormatError(f"{what} is not canonical base64")
    return raw


@dataclass(frozen=True)
class VerifierKey:
    """A public key with its name: checks signatures of notes signed by that name."""

    name: str
    public_key: bytes

    def __post_init__(self) -> None:
        check_key_name(self.name)
        if len(self.public_key) != KEY_SIZE:
            raise KeyFormatError(f"an Ed25519 public key is {KEY_SIZE} bytes, got {len(self.public_key)}")

    @property
    def key_id(self) -> int:
        return key_id(self.name, self.public_key)

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except InvalidSignature:
            return False
        return True

    def vkey(self) -> str:
        key64 = base64.b64encode(bytes([ALG_ED25519]) + self.public_key).decode()
        return f"{self.name}+{self.key_id:08x}+{key64}"

    def public_pem(self) -> bytes:
        return Ed25519PublicKey.from_public_bytes(self.public_key).public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def openssh(self) -> str:
        return Ed25519PublicKey.from_public_bytes(self.public_key).public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()

    @classmethod
    def parse(cls, vkey: str) -> VerifierKey:
        """A ``name+keyid+base64`` verifier key; its key id must match its name and key."""
        name, _, rest = vkey.partition("+")
        id16, _, key64 = rest.partition("+")
        if not _KEY_ID.fullmatch(id16):
            raise KeyFormatError(f"verifier key {vkey!r} is not name+<8 hex digits>+<base64 key>")
        raw = strict_b64decode(key64, "verifier key")
        if len(raw) != 1 + KEY_SIZE or raw[0] != ALG_ED25519:
            raise KeyFormatError("verifier key is not an Ed25519 key (algorithm byte 0x01, 32 bytes)")
        key = cls(check_key_name(name), raw[1:])
        if key.key_id != int(id16, 16):
            raise KeyFormatError(f"verifier key id {id16} does not match its name and key")
        return key

    @classmethod
    def load(cls, text: str, name: str | None = None) -> VerifierKey:
        """A verifier key string, or a PEM / OpenSSH public key given the key's ``name``."""
        text = text.strip()
        if not text.startswith(("-----BEGIN", "ssh-ed25519 ")):
            key = cls.parse(text)
            if name is not None and key.name != name:
                raise KeyFormatError(f"verifier key is named {key.name!r}, expected {name!r}")
            return key
        if name is None:
            raise KeyFormatError("a PEM or OpenSSH public key needs the key name given with it")
        try:
            loaded = (serialization.load_pem_public_key(text.encode()) if text.startswith("-----BEGIN")
                      else serialization.load_ssh_public_key(text.encode()))
        except ValueError as exc:
            raise KeyFormatError(f"unreadable public key: {exc}") from exc
        if not isinstance(loaded, Ed25519PublicKey):
            raise KeyFormatError("the public key is not an Ed25519 key")
        return cls(name, loaded.public_bytes_raw())


@dataclass(frozen=True)
class SigningKey:
    """The server's private key with its name. Its repr never shows the seed."""

    name: str
    seed: bytes = field(repr=False)

    def __post_init__(self) -> None:
        check_key_name(self.name)
        if len(self.seed) != KEY_SIZE:
            raise KeyFormatError(f"an Ed25519 private key (seed) is {KEY_SIZE} bytes")

    @classmethod
    def generate(cls, name: str) -> SigningKey:
        return cls(name, Ed25519PrivateKey.generate().private_bytes_raw())

    def _private(self) -> Ed25519PrivateKey:
        return Ed25519PrivateKey.from_private_bytes(self.seed)

    def verifier(self) -> VerifierKey:
        return VerifierKey(self.name, self._private().public_key().public_bytes_raw())

    @property
    def key_id(self) -> int:
        return self.verifier().key_id

    def sign(self, message: bytes) -> bytes:
        return self._private().sign(message)

    def skey(self) -> str:
        key64 = base64.b64encode(bytes([ALG_ED25519]) + self.seed).decode()
        return f"PRIVATE+KEY+{self.name}+{self.key_id:08x}+{key64}"

    def private_pem(self) -> bytes:
        return self._private().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption())

    @classmethod
    def parse(cls, skey: str) -> SigningKey:
        """A ``PRIVATE+KEY+name+keyid+base64`` signing key; the key id must match."""
        parts = skey.split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"] or not _KEY_ID.fullmatch(parts[3]):
            raise KeyFormatError("signing key is not PRIVATE+KEY+name+<8 hex digits>+<base64 key>")
        raw = strict_b64decode(parts[4], "signing key")
        if len(raw) != 1 + KEY_SIZE or raw[0] != ALG_ED25519:
            raise KeyFormatError("signing key is not an Ed25519 key (algorithm byte 0x01, 32 bytes)")
        key = cls(check_key_name(parts[2]), raw[1:])
        if key.key_id != int(parts[3], 16):
            raise KeyFormatError(f"signing key id {parts[3]} does not match its name and key")
        return key

    @classmethod
    def load(cls, data: bytes, name: str | None = None) -> SigningKey:
        """A signing key string, or an unencrypted PKCS#8 PEM / OpenSSH private key given ``name``."""
        text = data.decode("utf-8", "replace").strip()
        if text.startswith("PRIVATE+KEY+"):
            key = cls.parse(text)
            if name is not None and key.name != name:
                raise KeyFormatError(f"signing key is named {key.name!r}, expected {name!r}")
            return key
        if name is None:
            raise KeyFormatError("a PEM or OpenSSH private key needs the key name given with it")
        try:
            loaded = (serialization.load_ssh_private_key(data, None) if "OPENSSH PRIVATE KEY" in text
                      else serialization.load_pem_private_key(data, None))
        except (ValueError, TypeError) as exc:
            raise KeyFormatError(f"unreadable private key: {exc}") from exc
        if not isinstance(loaded, Ed25519PrivateKey):
            raise KeyFormatError("the private key is not an Ed25519 key")
        return cls(name, loaded.private_bytes_raw())
