"""An adapter's artifact for download: its file listing, and one deterministic tar.

Both are read from the content-addressed store after it re-verified the address, so what
is served is what was registered. The tar is byte-stable (files sorted, owner, times and
modes fixed), so its sha256, sent before the body, identifies the download; the artifact's
own address can be re-computed from the listing (``ADDRESS_RULE``).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from kernel.errors import Conflict, NotFound
from kernel.values import JsonValue
from trainer.registry.artifacts import ArtifactCorrupted, ArtifactNotFound, ArtifactStore, manifest

ADDRESS_RULE = ("sha256 over one line '<path>\\0<file sha256>\\n' per file, sorted by path "
                "(trainer/registry/artifacts.py)")
CHUNK = 1 << 20


class ArtifactMissing(NotFound):
    """The registry names an artifact the store does not hold."""


class ArtifactAltered(Conflict):
    """The stored bytes no longer hash to the registered address."""


@dataclass(frozen=True)
class ArtifactFile(JsonValue):
    path: str
    sha256: str
    size: int


def verified_dir(store: ArtifactStore, sha256: str) -> Path:
    """The artifact's directory, re-hashed against its address.

    Raises:
        ArtifactMissing: not in the store.  ArtifactAltered: the bytes changed.
    """
    try:
        return store.open_dir(sha256)
    except ArtifactNotFound:
        raise ArtifactMissing(f"artifact {sha256} is missing from the artifact store") from None
    except ArtifactCorrupted as exc:
        raise ArtifactAltered(str(exc)) from None


def listing(directory: Path) -> list[ArtifactFile]:
    """Every file of an artifact with its sha256 and size, sorted by path."""
    return [ArtifactFile(path, digest, size) for path, digest, size in manifest(directory)]


def file_in(directory: Path, relative: str) -> Path:
    """One file of an artifact; a path outside it, or not a listed file, is not found.

    Raises:
        NotFound: no such file in the artifact.
    """
    if relative not in {f.path for f in listing(directory)}:
        raise NotFound(f"the artifact has no file '{relative}'")
    return directory / relative


@dataclass
class PackedTar:
    sha256: str
    size: int
    body: IO[bytes]

    def chunks(self) -> Iterator[bytes]:
        try:
            self.body.seek(0)
            while chunk := self.body.read(CHUNK):
                yield chunk
        finally:
            self.body.close()


def pack_tar(directory: Path, prefix: str) -> PackedTar:
    """A tar of the artifact's files under ``prefix/``, identical bytes every time."""
    body = tempfile.SpooledTemporaryFile(max_size=16 * CHUNK)  # noqa: SIM115 (closed by chunks)
    with tarfile.open(fileobj=body, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in listing(directory):
            info = tarfile.TarInfo(f"{prefix}/{entry.path}")
            info.size, info.mode, info.mtime = entry.size, 0o444, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with (directory / entry.path).open("rb") as handle:
                tar.addfile(info, handle)
    size = body.tell()
    body.seek(0)
    digest = hashlib.sha256()
    while chunk := body.read(CHUNK):
        digest.update(chunk)
    return PackedTar(sha256=digest.hexdigest(), size=size, body=body)


def unpack_tar(data: bytes, target: Path) -> Path:
    """Extract a tar made by ``pack_tar`` (for clients and tests); returns its top folder."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(target, filter="data")
        top = tar.getnames()[0].split("/", 1)[0]
    return target / top
