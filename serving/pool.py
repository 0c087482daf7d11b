"""One base model and the adapters serving it, each loaded once under its artifact digest.

An adapter's name in the PEFT model is ``a`` + the full sha256 of its artifact, so a name
can never stand for other bytes: a new version, or an alias moved to other bytes, is
another name, and the bytes under a name were hash-checked when the artifact was opened
(``ArtifactStore.open_dir``). The base's weights are checked against the registry once,
when the pool loads it. Past ``max_adapters`` the least recently used adapter is
unloaded. Only the batcher's thread touches a pool (no lock needed).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernel.errors import Invalid
from serving.choice import BaseRef

BASE_ROW = "__base__"  # PEFT's name for "no adapter" in a mixed batch


def adapter_name(digest: str) -> str:
    return f"a{digest}"


class AdapterPool:
    def __init__(self, base: BaseRef, device: str | None, precision: str, max_adapters: int) -> None:
        from trainer.ml.digest import weights_sha256
        from trainer.ml.load import load_base_model, load_tokenizer, resolve_device

        if weights_sha256(base.path) != base.weights_sha256:
            raise Invalid(f"base model '{base.name}' at {base.path} has other weights than "
                          "the registered ones")
        self.base, self.max_adapters = base, max_adapters
        self.device = resolve_device(device or None)
        self.precision = precision
        self.tokenizer = load_tokenizer(base.path)
        self.model: Any = load_base_model(base.path, self.device, precision).eval()
        self.peft = False
        config = self.model.config
        self.context_length = int(getattr(config, "max_position_embeddings", None) or 1 << 30)
        self.loaded: OrderedDict[str, str] = OrderedDict()  # digest -> adapter name

    def ensure(self, digest: str, open_dir: Callable[[str], Path], keep: set[str]) -> str:
        """The adapter's name, loading its verified bytes on first use; ``keep``: digests
        the batch about to run needs (never evicted for another)."""
        name = self.loaded.get(digest)
        if name is not None:
            self.loaded.move_to_end(digest)
            return name
        directory, name = open_dir(digest), adapter_name(digest)
        if not self.peft:
            from peft import PeftModel

            self.model = PeftModel.from_pretrained(self.model, str(directory), adapter_name=name,
                                                   is_trainable=False).eval()
            self.peft = True
        else:
            self.model.load_adapter(str(directory), adapter_name=name, is_trainable=False)
        self.loaded[digest] = name
        self._evict(keep | {digest})
        return name

    def _evict(self, keep: set[str]) -> None:
        # PEFT keeps at least one adapter; the newest stays, the oldest unused ones go.
        for digest in list(self.loaded):
            if len(self.loaded) <= self.max_adapters:
                return
            if digest not in keep:
                self.model.delete_adapter(self.loaded.pop(digest))

    def row_names(self, digests: list[str | None]) -> list[str] | None:
        """PEFT's per-row adapter names for a batch (None: no adapter is loaded at all)."""
        if not self.peft:
            return None
        return [self.loaded[d] if d is not None else BASE_ROW for d in digests]
