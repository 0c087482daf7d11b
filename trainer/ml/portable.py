"""Adapters that travel: what a trained adapter directory holds before it is stored.

An artifact is the stock PEFT pair and nothing else: ``adapter_config.json`` and
``adapter_model.safetensors``. Its address (``artifacts``: every file's sha256) is then a
function of the weights and the config alone, so byte-identical weights have one
address in every data directory.

The config names the base by a portable reference, the base model's registry name
(``base_model_name_or_path = "smollm2-135m"``), never a path of the machine that trained
it: ``HCP_MODELS_DIR/<name>`` on a host of the project, ``GET
/v1/base-models/{name}/artifact`` from another, and a directory of that name beside the
caller for a stock ``AutoPeftModelForCausalLM.from_pretrained(adapter_dir)``
(``PeftModel.from_pretrained(base, adapter_dir)`` takes any base). Which weights the
name stands for is pinned in the weights file itself: its safetensors header metadata
(``hcp.base_model``, ``hcp.base_weights_sha256``), which loaders ignore. Pure: JSON and
the safetensors header, no torch.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

CONFIG, WEIGHTS = "adapter_config.json", "adapter_model.safetensors"
ARTIFACT_FILES = (CONFIG, WEIGHTS)
BASE_NAME_KEY, BASE_SHA_KEY = "hcp.base_model", "hcp.base_weights_sha256"
_MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit


def make_portable(adapter_dir: Path, base_name: str, base_weights_sha256: str) -> None:
    """Name the base by ``base_name`` in the config, pin its weights in the weights file's
    metadata, and remove every file but the PEFT pair (the trainer's notes live in the
    registry). Deterministic: the same weights and base give the same bytes."""
    for path in sorted(adapter_dir.rglob("*")):
        if path.is_file() and path.relative_to(adapter_dir).as_posix() not in ARTIFACT_FILES:
            path.unlink()
    config = adapter_dir / CONFIG
    if config.exists():
        data = json.loads(config.read_text())
        data["base_model_name_or_path"] = base_name
        config.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    weights = adapter_dir / WEIGHTS
    if weights.exists():
        set_metadata(weights, {BASE_NAME_KEY: base_name, BASE_SHA_KEY: base_weights_sha256})


def set_metadata(path: Path, values: dict[str, str]) -> None:
    """Merge ``values`` into a safetensors file's ``__metadata__``, leaving the tensors'
    bytes as they are (their offsets count from the end of the header)."""
    raw = path.read_bytes()
    header, body = _split(raw, path)
    meta = _strings(header.get("__metadata__"))
    meta.update(values)
    header["__metadata__"] = dict(sorted(meta.items()))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the body stays 8-byte aligned, as safetensors writes it
    path.write_bytes(struct.pack("<Q", len(text)) + text + body)


def metadata(path: Path) -> dict[str, str]:
    """A safetensors file's ``__metadata__``."""
    header, _ = _split(path.read_bytes(), path)
    return _strings(header.get("__metadata__"))


def _strings(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _split(raw: bytes, path: Path) -> tuple[dict[str, object], bytes]:
    if len(raw) < 8:
        raise ValueError(f"{path} is not a safetensors file")
    (size,) = struct.unpack("<Q", raw[:8])
    if size > min(_MAX_HEADER, len(raw) - 8):
        raise ValueError(f"{path}: safetensors header of {size} bytes does not fit the file")
    header = json.loads(raw[8:8 + size])
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the safetensors header is not an object")
    return header, raw[8 + size:]
