"""The one check every base model load goes through: its weights are the registered ones.

A base model's weight files are hashed (``trainer.ml.digest.weights_sha256``) against the
digest the registry holds for it, once per state of its files: the result is kept with
each weight file's stat (mode, size, times, inode), and the files are hashed again when
one of those changed (a write changes a file's ctime, which cannot be put back). The
engine's pools, the router's representation (the pool's) and training (the runner is given
this function) all load through here, so "which bytes made this text" has one answer.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kernel.errors import Invalid
from trainer.ml.digest import WEIGHT_PATTERNS, weights_sha256

_VERIFIED: dict[tuple[str, str], tuple[tuple[str, int, int, int, int, int], ...]] = {}
_LOCK = threading.Lock()


class BaseWeightsChanged(Invalid):
    field = "base_model"


def _fingerprint(root: Path) -> tuple[tuple[str, int, int, int, int, int], ...]:
    """Each weight file's state as stat tells it: a write changes its ctime, which nobody
    can set back, and a replaced file is another inode."""
    found = []
    for path in sorted({p for pattern in WEIGHT_PATTERNS for p in root.glob(pattern) if p.is_file()}):
        st = path.stat()
        found.append((path.name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
    return tuple(found)


def verified_base(name: str, path: str | Path, expected_sha256: str) -> Path:
    """The base's directory once its weights hash to ``expected_sha256``.

    Raises:
        BaseWeightsChanged: the files hash to something else (or are gone).
    """
    root = Path(path).resolve()
    key = (str(root), expected_sha256)
    with _LOCK:  # one hash at a time: two threads loading the same base hash it once
        fingerprint = _fingerprint(root) if root.is_dir() else ()
        if fingerprint and _VERIFIED.get(key) == fingerprint:
            return root
        try:
            found = weights_sha256(root)
        except FileNotFoundError:
            found = None
        if found != expected_sha256:
            _VERIFIED.pop(key, None)
            # No path in the text: a tenant's chat request can meet this error.
            raise BaseWeightsChanged(f"base model '{name}' has other weights than the registered "
                                     "ones")
        _VERIFIED[key] = fingerprint
        return root


def forget_verified() -> None:
    """Hash every base again on its next load (tests)."""
    with _LOCK:
        _VERIFIED.clear()
