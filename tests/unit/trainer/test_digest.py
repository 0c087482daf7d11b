from __future__ import annotations

from pathlib import Path

import pytest

from trainer.ml.digest import weights_sha256


def _model_dir(root: Path, files: dict[str, bytes]) -> Path:
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def test_weights_hash_ignores_config_but_covers_weights_and_names(tmp_path: Path) -> None:
    a = _model_dir(tmp_path / "a", {"model.safetensors": b"w", "config.json": b"{}"})
    b = _model_dir(tmp_path / "b", {"model.safetensors": b"w", "config.json": b'{"x": 1}'})
    c = _model_dir(tmp_path / "c", {"model.safetensors": b"W"})
    d = _model_dir(tmp_path / "d", {"other.safetensors": b"w"})

    assert weights_sha256(a) == weights_sha256(b)
    assert weights_sha256(a) != weights_sha256(c)
    assert weights_sha256(a) != weights_sha256(d)


def test_weights_hash_refuses_a_directory_without_weights(tmp_path: Path) -> None:
    empty = _model_dir(tmp_path / "e", {"config.json": b"{}"})

    with pytest.raises(FileNotFoundError):
        weights_sha256(empty)
