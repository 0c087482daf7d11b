"""Content digests of files and model directories (pure: hashlib only)."""

from __future__ import annotations

import hashlib
from pathlib import Path

_CHUNK = 1 << 20

# File name patterns that hold tensors in a Hugging Face model directory. Config, tokenizer
# and model-card files are deliberately left out: they can be rewritten (a newer library
# version re-serialising config.json) without changing what the model computes.
WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.ckpt", "*.gguf")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def weights_sha256(model_dir: str | Path) -> str:
    """Digest of a model's weights: sha256 over (name, file sha256) of each weight file.

    Files are the top-level matches of ``WEIGHT_PATTERNS``, sorted by name, so the digest
    does not depend on directory listing order and a renamed shard changes it.

    Raises:
        FileNotFoundError: the directory holds no weight file.
    """
    root = Path(model_dir)
    files = sorted({p for pat in WEIGHT_PATTERNS for p in root.glob(pat) if p.is_file()})
    if not files:
        raise FileNotFoundError(f"no weight files ({', '.join(WEIGHT_PATTERNS)}) in {root}")
    h = hashlib.sha256()
    for path in files:
        h.update(f"{path.name}\0{file_sha256(path)}\n".encode())
    return h.hexdigest()
