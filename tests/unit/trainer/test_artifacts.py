from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from trainer.registry.artifacts import (
    ArtifactCorrupted,
    ArtifactNotFound,
    LocalArtifactStore,
    dir_sha256,
)


def _adapter_like(root: Path) -> Path:
    (root / "nested").mkdir(parents=True)
    (root / "adapter_config.json").write_text('{"r": 8}')
    (root / "adapter_model.safetensors").write_bytes(bytes(range(256)) * 4)
    (root / "nested" / "extra.txt").write_text("x")
    return root


def _make_writable(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


def test_put_then_open_returns_the_same_files(tmp_path: Path) -> None:
    src = _adapter_like(tmp_path / "src")
    store = LocalArtifactStore(tmp_path / "store")

    ref = store.put_dir(src)
    opened = store.open_dir(ref.sha256)

    assert ref.sha256 == dir_sha256(src)
    assert store.exists(ref.sha256)
    assert opened == tmp_path / "store" / ref.sha256[:2] / ref.sha256
    assert ref.uri == opened.resolve().as_uri()
    assert ref.size == 1024 + len('{"r": 8}') + 1
    for f in src.rglob("*"):
        if f.is_file():
            assert (opened / f.relative_to(src)).read_bytes() == f.read_bytes()


def test_stored_artifacts_are_read_only_and_leave_no_temp_debris(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "store")

    opened = store.open_dir(store.put_dir(_adapter_like(tmp_path / "src")).sha256)

    for p in [opened, *opened.rglob("*")]:
        assert stat.S_IMODE(p.stat().st_mode) & 0o222 == 0, p
    assert list((tmp_path / "store" / ".tmp").iterdir()) == []


def test_putting_the_same_content_twice_is_idempotent(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "store")
    a = _adapter_like(tmp_path / "a")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    os.utime(b / "adapter_config.json", (0, 0))  # timestamps are not content

    assert store.put_dir(a) == store.put_dir(b)


def test_a_changed_byte_on_disk_is_detected(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "store")
    ref = store.put_dir(_adapter_like(tmp_path / "src"))
    stored = store.open_dir(ref.sha256)
    _make_writable(stored)
    weights = stored / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[100] ^= 0x01
    weights.write_bytes(bytes(data))

    with pytest.raises(ArtifactCorrupted):
        store.open_dir(ref.sha256)


def test_an_added_or_removed_file_is_detected(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "store")
    ref = store.put_dir(_adapter_like(tmp_path / "src"))
    stored = store.open_dir(ref.sha256)
    _make_writable(stored)
    (stored / "nested" / "extra.txt").rename(stored / "extra.txt")

    with pytest.raises(ArtifactCorrupted):
        store.open_dir(ref.sha256)


def test_unknown_and_malformed_addresses(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "store")

    assert not store.exists("0" * 64)
    with pytest.raises(ArtifactNotFound):
        store.open_dir("0" * 64)
    with pytest.raises(ValueError):
        store.open_dir("../../etc")


def test_symlinks_are_refused(tmp_path: Path) -> None:
    src = _adapter_like(tmp_path / "src")
    (src / "link").symlink_to(src / "adapter_config.json")

    with pytest.raises(ValueError, match="regular files"):
        LocalArtifactStore(tmp_path / "store").put_dir(src)
