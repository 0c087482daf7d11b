"""Every base model load goes through one check: its weights hash to the registered digest,
hashed once per state of the files and again after any write; other weights are refused
without naming where they lie."""

from __future__ import annotations

from pathlib import Path

import pytest

import inference.verify as verify
from inference.verify import BaseWeightsChanged, forget_verified, verified_base
from trainer.ml.digest import weights_sha256


def test_weights_are_hashed_once_per_state_of_their_files(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    forget_verified()
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"weights, as registered")
    digest = weights_sha256(tmp_path)
    hashed: list[Path] = []
    monkeypatch.setattr(verify, "weights_sha256",
                        lambda root: hashed.append(root) or weights_sha256(root))
    for _ in range(3):
        assert verified_base("tiny", tmp_path, digest) == tmp_path.resolve()
    assert len(hashed) == 1
    weights.write_bytes(b"weights, as rewritten")  # the same size would not hide it: ctime
    with pytest.raises(BaseWeightsChanged, match="'tiny' has other weights") as refused:
        verified_base("tiny", tmp_path, digest)
    assert str(tmp_path) not in str(refused.value) and len(hashed) == 2
    with pytest.raises(BaseWeightsChanged):
        verified_base("tiny", tmp_path / "gone", digest)
