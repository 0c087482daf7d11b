"""Webhook secrets at rest: encrypted with the server's webhook key (Fernet: AES-128-CBC and
HMAC-SHA256), so neither the log nor the table holds a secret anyone could sign with.

The key is a file (``HCP_WEBHOOK_KEY_FILE``, default ``<data_dir>/webhook.key``) made on
first use, readable by the server's user only. Every process that signs or subscribes
(the API, ``hcp webhooks deliver``) must read the same file.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken


class SecretKeyMissing(RuntimeError):
    pass


class SecretBox:
    def __init__(self, key_file: Path) -> None:
        self.key_file = key_file
        self._fernet: Fernet | None = None

    def _box(self) -> Fernet:
        if self._fernet is None:
            self._fernet = Fernet(self._key())
        return self._fernet

    def _key(self) -> bytes:
        try:
            return self.key_file.read_bytes().strip()
        except FileNotFoundError:
            pass
        self.key_file.parent.mkdir(parents=True, exist_ok=True)
        key = Fernet.generate_key()
        try:  # O_EXCL: two processes starting at once agree on the first one's key
            fd = os.open(self.key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return self.key_file.read_bytes().strip()
        with os.fdopen(fd, "wb") as out:
            out.write(key)
        return key

    def seal(self, secret: bytes) -> str:
        return self._box().encrypt(secret).decode()

    def open(self, ciphertext: str) -> bytes:
        try:
            return self._box().decrypt(ciphertext.encode())
        except InvalidToken:
            raise SecretKeyMissing(f"{self.key_file} is not the key this secret was sealed "
                                   "with (was the webhook key file replaced?)") from None
