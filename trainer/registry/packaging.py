"""An artifact (or a base model's directory) for download: its file listing, and one
deterministic tar.

The tar is byte-stable (files sorted, owner, times and modes fixed), so its sha256, sent
before the body, identifies the download; the artifact's own address can be re-computed
from the listing (``ADDRESS_RULE``). ``integrations.downloads`` verifies what is served.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kernel.errors import Conflict, NotFound
from kernel.values import JsonValue
from trainer.registry.artifacts import manifest

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


def listing(directory: Path) -> list[ArtifactFile]:
    """Every file of an artifact with its sha256 and size, sorted by path."""
    return [ArtifactFile(path, digest, size) for path, digest, size in manifest(directory)]


def tar_chunks(directory: Path, prefix: str, files: list[ArtifactFile]) -> Iterator[bytes]:
    """A tar of ``files`` under ``prefix/``, identical bytes every time (the files in the
    listing's order, owner, times and modes fixed: PAX, as ``tarfile`` writes it), made as
    it is sent: nothing of the directory is copied or held whole (a base is gigabytes)."""
    sent = 0
    for entry in files:
        info = tarfile.TarInfo(f"{prefix}/{entry.path}")
        info.size, info.mode, info.mtime = entry.size, 0o444, 0
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        header = info.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape")
        yield header
        with (directory / entry.path).open("rb") as handle:
            left = entry.size
            while left > 0 and (chunk := handle.read(min(CHUNK, left))):
                left -= len(chunk)
                yield chunk
        if left:
            raise ArtifactAltered(f"{entry.path} is shorter than when it was listed")
        padding = -entry.size % tarfile.BLOCKSIZE
        sent += len(header) + entry.size + padding
        yield tarfile.NUL * padding
    end = 2 * tarfile.BLOCKSIZE  # as TarFile.close writes it: two empty blocks, then a record
    yield tarfile.NUL * (end + -(sent + end) % tarfile.RECORDSIZE)


def unpack_tar(data: bytes, target: Path) -> Path:
    """Extract a tar made by ``pack_tar`` (for clients and tests); returns its top folder."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(target, filter="data")
        top = tar.getnames()[0].split("/", 1)[0]
    return target / top
