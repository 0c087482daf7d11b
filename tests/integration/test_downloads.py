"""An adapter's artifact served for download is hashed against its address once per state
of its files, and a change to them is refused at the next request, in the real store."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from integrations.downloads import DownloadDirs
from trainer.registry.artifacts import LocalArtifactStore
from trainer.registry.packaging import ArtifactAltered, ArtifactMissing


def test_an_artifact_is_hashed_once_and_a_change_to_it_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "adapter"
    source.mkdir()
    (source / "adapter_config.json").write_text('{"r": 8}')
    (source / "adapter_model.safetensors").write_bytes(os.urandom(1 << 20))
    store = LocalArtifactStore(tmp_path / "artifacts")
    ref = store.put_dir(source)
    downloads = DownloadDirs()
    for _ in range(20):
        found = downloads.artifact(store, ref.sha256, "chat-1")
        assert found.file("adapter_config.json").size == 8
    assert downloads.hashed == 1 and found.artifact_sha256 == ref.sha256

    weights = store.location(ref.sha256) / "adapter_model.safetensors"
    times = weights.stat()
    weights.chmod(0o644)
    data = bytearray(weights.read_bytes())
    data[7] ^= 1
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(times.st_atime_ns, times.st_mtime_ns))  # the times put back
    with pytest.raises(ArtifactAltered, match="now hashes to"):
        downloads.artifact(store, ref.sha256, "chat-1")
    with pytest.raises(ArtifactMissing):
        downloads.artifact(store, "0" * 64, "none")
