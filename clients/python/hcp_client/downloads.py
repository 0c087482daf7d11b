"""Artifacts as a serving host fetches them: the tar, checked against the sha256 the server
sent before the body, unpacked, and every file checked against the server's listing."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from typing import Any

from hcp_client.errors import ArtifactMismatch


def unpack_verified(data: bytes, headers: Any, listing: Any, dest: Path) -> Path:
    """The unpacked directory; raises ArtifactMismatch when any hash disagrees."""
    sent = headers.get("x-content-sha256")
    got = hashlib.sha256(data).hexdigest()
    if sent != got:
        raise ArtifactMismatch(f"the tar hashes to {got}, the server said {sent}")
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        top = tar.getnames()[0].split("/", 1)[0]
        tar.extractall(dest, filter="data")
    root = dest / top
    for entry in listing.files:
        digest = hashlib.sha256((root / entry.path).read_bytes()).hexdigest()
        if digest != entry.sha256:
            raise ArtifactMismatch(f"{entry.path} hashes to {digest}, the listing says {entry.sha256}")
    address = hashlib.sha256("".join(f"{f.path}\0{f.sha256}\n" for f in sorted(
        listing.files, key=lambda f: f.path)).encode()).hexdigest()
    if address != listing.artifact_sha256:
        raise ArtifactMismatch(f"the files address {address}, the server said {listing.artifact_sha256}")
    return root
