"""Downloads: a base model's registered directory, checked against the weight hash it was
registered with, and an adapter's artifact, checked against its address, each listed and
packed by one rule (the address rule), so a host with nothing but the API can fetch the
base an adapter names and the adapter.

The reference an adapter's ``adapter_config.json`` holds is the base's registry name
(``base_model_name_or_path = "<name>"``, ``trainer/ml/portable.py``): the tar unpacks to a
directory of that name, so beside the adapter a stock ``AutoPeftModelForCausalLM`` finds it.

A base model is gigabytes (an adapter, megabytes), and any ``registry:read`` key may ask
for its smallest file: hashing it whole per request made one 171-byte download cost three
reads of the model. So a directory is verified (a base's weights against the registry, an
adapter's files against its address, every file hashed for the listing) once per state of
its files, which is told by what ``stat`` says of each (path, size, mtime, ctime, inode):
an edit, a replaced or added file changes it and the next request hashes again. The tar's
digest is computed once the same way, and the tar itself is made as it is sent.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kernel.errors import Conflict, NotFound
from trainer.ml.digest import weights_sha256
from trainer.registry.artifacts import ArtifactNotFound, ArtifactStore
from trainer.registry.packaging import ArtifactAltered, ArtifactFile, ArtifactMissing, listing, tar_chunks

Fingerprint = tuple[tuple[str, int, int, int, int, int], ...]


class BaseWeightsAltered(Conflict):
    """The registered directory's weights no longer hash to the registered digest."""


@dataclass(frozen=True)
class TarDigest:
    sha256: str
    size: int


@dataclass
class VerifiedDir:
    name: str  # the tar's top folder
    directory: Path
    files: list[ArtifactFile]  # every file with its sha256, sorted by path
    artifact_sha256: str
    tar: TarDigest | None = None  # computed on the first tar asked for

    def file(self, relative: str) -> ArtifactFile:
        """Raises NotFound unless ``relative`` is a listed file (nothing outside it is)."""
        found = next((f for f in self.files if f.path == relative), None)
        if found is None:
            raise NotFound(f"'{self.name}' has no file '{relative}'")
        return found

    def tar_chunks(self) -> Iterator[bytes]:
        return tar_chunks(self.directory, self.name, self.files)


class DownloadDirs:
    """Directories served for download (registered bases, adapter artifacts), each verified
    once per state of its files (thread-safe)."""

    def __init__(self, max_kept: int = 256) -> None:
        self.max_kept = max_kept
        self._kept: dict[tuple[str, ...], tuple[Fingerprint, VerifiedDir]] = {}
        self._lock = threading.Lock()
        self.hashed = 0  # full verifications done (tests and benches read it)

    def base(self, name: str, path: str, registered_weights_sha256: str) -> VerifiedDir:
        """Raises NotFound (the directory or its weights are gone) or BaseWeightsAltered."""
        directory = Path(path)
        return self._verified(("base", name, path, registered_weights_sha256), name, directory,
                              lambda: _verify_base(name, directory, registered_weights_sha256))

    def artifact(self, store: ArtifactStore, sha256: str, name: str) -> VerifiedDir:
        """An adapter's artifact under the name its tar unpacks to. Raises ArtifactMissing
        (404) or ArtifactAltered (409: its files no longer hash to the address)."""
        try:
            directory = store.location(sha256)
        except ArtifactNotFound:
            raise ArtifactMissing(f"artifact {sha256} is missing from the artifact store") from None
        return self._verified(("artifact", sha256, name), name, directory,
                              lambda: _verify_artifact(name, directory, sha256))

    def _verified(self, key: tuple[str, ...], name: str, directory: Path,
                  verify: Callable[[], VerifiedDir]) -> VerifiedDir:
        before = fingerprint(name, directory)
        kept = self._kept.get(key)
        if kept is not None and kept[0] == before:
            return kept[1]
        found = verify()
        self.hashed += 1
        if fingerprint(name, directory) == before:  # nothing moved while it was hashed
            with self._lock:
                if len(self._kept) >= self.max_kept:
                    self._kept.clear()
                self._kept[key] = (before, found)
        return found

    def tar(self, base: VerifiedDir) -> TarDigest:
        """The tar's sha256 and size, made once per verified state."""
        if base.tar is None:
            digest, size = hashlib.sha256(), 0
            for chunk in base.tar_chunks():
                digest.update(chunk)
                size += len(chunk)
            base.tar = TarDigest(digest.hexdigest(), size)
        return base.tar


def fingerprint(name: str, directory: Path) -> Fingerprint:
    """What ``stat`` says of every entry under ``directory``: it changes when a file does."""
    if not directory.is_dir():
        raise NotFound(f"'{name}': its directory is missing on the server")
    entries = []
    for entry in directory.rglob("*"):
        st = entry.lstat()
        entries.append((entry.relative_to(directory).as_posix(), st.st_mode, st.st_size,
                        st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(sorted(entries))


def _verify_base(name: str, directory: Path, registered_weights_sha256: str) -> VerifiedDir:
    try:
        found = weights_sha256(directory)
    except FileNotFoundError:
        raise NotFound(f"base model '{name}' has no weight files on the server") from None
    if found != registered_weights_sha256:
        raise BaseWeightsAltered(f"base model '{name}': the weights hash to {found[:12]}…, not the "
                                 f"registered {registered_weights_sha256[:12]}…")
    files = listing(directory)
    return VerifiedDir(name, directory, files, dir_sha256_of(files))


def _verify_artifact(name: str, directory: Path, sha256: str) -> VerifiedDir:
    files = listing(directory)
    actual = dir_sha256_of(files)
    if actual != sha256:
        raise ArtifactAltered(f"artifact {sha256} now hashes to {actual}")
    return VerifiedDir(name, directory, files, actual)


def dir_sha256_of(files: list[ArtifactFile]) -> str:
    """``trainer.registry.artifacts.dir_sha256`` from a listing already made (the same rule,
    no second read of the files)."""
    digest = hashlib.sha256()
    for entry in files:
        digest.update(f"{entry.path}\0{entry.sha256}\n".encode())
    return digest.hexdigest()
