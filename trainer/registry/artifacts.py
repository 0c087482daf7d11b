"""Content-addressed storage of artifact directories (adapters), verified on every open.

An artifact's address is the sha256 of its *manifest*: one line
``<relative posix path>\\0<file sha256>\\n`` per regular file, sorted by path. File
names, contents and the set of files are all covered; timestamps and permissions are
not, so the same adapter saved twice has the same address wherever it was written.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from trainer.ml.digest import file_sha256

_SHA256 = re.compile(r"[0-9a-f]{64}")


class ArtifactNotFound(KeyError):
    pass


class ArtifactCorrupted(Exception):
    """The bytes stored under an address no longer hash to it."""


@dataclass(frozen=True)
class ArtifactRef:
    sha256: str
    uri: str
    size: int  # total bytes of the files


def manifest(src_dir: Path) -> list[tuple[str, str, int]]:
    """(relative posix path, sha256, size) of every file under ``src_dir``, sorted by path.

    Raises:
        ValueError: a symlink or special file is present (its content would be ambiguous).
    """
    entries = []
    for path in src_dir.rglob("*"):
        mode = path.lstat().st_mode
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            raise ValueError(f"only regular files can be stored, not {path}")
        entries.append((path.relative_to(src_dir).as_posix(), file_sha256(path), path.stat().st_size))
    return sorted(entries)


def _manifest_sha256(entries: list[tuple[str, str, int]]) -> str:
    h = hashlib.sha256()
    for rel, digest, _ in entries:
        h.update(f"{rel}\0{digest}\n".encode())
    return h.hexdigest()


def dir_sha256(src_dir: str | Path) -> str:
    """The address of a directory's content (see the module docstring)."""
    return _manifest_sha256(manifest(Path(src_dir)))


class ArtifactStore(ABC):
    """Port: an immutable, content-addressed store of directories."""

    @abstractmethod
    def put_dir(self, src_dir: str | Path) -> ArtifactRef:
        """Store a copy of ``src_dir`` under its content address; idempotent.

        Returns:
            The reference; storing identical content again returns the same one.
        """

    @abstractmethod
    def open_dir(self, sha256: str) -> Path:
        """A local, read-only directory with the artifact's files, verified against its hash.

        Raises:
            ArtifactNotFound: nothing is stored under ``sha256``.
            ArtifactCorrupted: the stored bytes no longer hash to ``sha256``.
        """

    @abstractmethod
    def exists(self, sha256: str) -> bool:
        """Whether an artifact is stored under ``sha256`` (not verified)."""

    @abstractmethod
    def location(self, sha256: str) -> Path:
        """Where the artifact's files are, not verified (``open_dir`` verifies); a caller
        that verifies once and remembers it (downloads) reads them there.

        Raises:
            ArtifactNotFound: nothing is stored under ``sha256``.
        """


def _check_address(sha256: str) -> str:
    # Addresses become path components: anything but 64 lowercase hex digits is refused.
    if not _SHA256.fullmatch(sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    return sha256


def _set_tree_mode(root: Path, *, writable: bool) -> None:
    file_mode, dir_mode = (0o644, 0o755) if writable else (0o444, 0o555)
    for path in [*root.rglob("*"), root]:
        path.chmod(dir_mode if path.is_dir() else file_mode)


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for path in [*root.rglob("*"), root]:
        _fsync_path(path)


class LocalArtifactStore(ArtifactStore):
    """Artifacts as read-only directories at ``root/<sha256[:2]>/<sha256>/``.

    A put copies into ``root/.tmp/`` and renames into place once the copy is complete and
    synced, so a crash leaves at most debris in ``.tmp`` (safe to delete while no put
    runs), never a partial artifact at an address.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def exists(self, sha256: str) -> bool:
        return self._path(_check_address(sha256)).is_dir()

    def put_dir(self, src_dir: str | Path) -> ArtifactRef:
        src = Path(src_dir)
        if not src.is_dir():
            raise NotADirectoryError(src)
        tmp = self.root / ".tmp" / uuid.uuid4().hex
        tmp.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, tmp, symlinks=True)
        # Hash the copy, not the source, so what is stored is exactly what is addressed
        # even if the source changes while it is copied.
        entries = manifest(tmp)
        sha = _manifest_sha256(entries)
        final = self._path(sha)
        if final.is_dir():
            shutil.rmtree(tmp)
        else:
            _fsync_tree(tmp)
            _set_tree_mode(tmp, writable=False)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                tmp.rename(final)
            except OSError:
                if not final.is_dir():
                    raise
                # A concurrent put of the same content won the race; theirs is identical.
                _set_tree_mode(tmp, writable=True)
                shutil.rmtree(tmp)
            else:
                _fsync_path(final.parent)  # make the rename itself durable
        return ArtifactRef(sha256=sha, uri=final.resolve().as_uri(),
                           size=sum(size for _, _, size in entries))

    def location(self, sha256: str) -> Path:
        path = self._path(_check_address(sha256))
        if not path.is_dir():
            raise ArtifactNotFound(sha256)
        return path

    def open_dir(self, sha256: str) -> Path:
        path = self.location(sha256)
        actual = dir_sha256(path)
        if actual != sha256:
            raise ArtifactCorrupted(f"artifact {sha256} now hashes to {actual}")
        return path
