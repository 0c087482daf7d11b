"""One base model and the adapters serving on it, each loaded once under its artifact digest.

An adapter's name in the PEFT model is ``a`` + the full sha256 of its artifact, so a name
can never stand for other bytes: a new version, or an alias moved to other bytes, is
another name. The base's weights go through ``inference.verify`` when the pool loads
it. Past ``max_adapters`` the least recently used adapter is unloaded, never one a running
batch holds (``hold``).

The online batcher's thread and offline callers (the harness, a gate in a training thread)
share the pool: every forward pass runs under ``lock`` after ``activate`` made the model
answer as asked (one adapter active, the adapters off for the bare base, or per-row names
for a mixed batch). The state is changed only when it differs, so a run of steps with the
same adapter pays nothing for it.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from inference.types import Adapter, BaseModel
from inference.verify import verified_base

BASE_ROW = "__base__"  # PEFT's name for "no adapter" in a mixed batch
MIXED = "<mixed>"  # the state where each row names its adapter
OpenDir = Callable[[str], Path]  # an artifact's verified directory by digest


def adapter_name(digest: str) -> str:
    return f"a{digest}"


class ModelPool:
    def __init__(self, base: BaseModel, device: Any, precision: str, max_adapters: int,
                 open_dir: OpenDir) -> None:
        from inference.embedded.rows import RowLoRA  # torch: imported when a pool is built
        from trainer.ml.load import base_dtype, load_base_model, load_tokenizer

        root = verified_base(base.name, base.path, base.weights_sha256)
        self.base, self.device, self.precision = base, device, precision
        self.max_adapters, self.open_dir = max_adapters, open_dir
        self.dtype = base_dtype(device, precision)
        self.tokenizer = load_tokenizer(root)
        self.model: Any = load_base_model(root, device, precision).eval()
        self.peft = False
        config = self.model.config
        self.context_length = int(getattr(config, "max_position_embeddings", None) or 1 << 30)
        self.max_prompt_chars = prompt_chars_bound(self.tokenizer, self.context_length)
        self.loaded: OrderedDict[str, str] = OrderedDict()  # digest -> adapter name
        self.held: Counter[str] = Counter()  # digests running batches use
        self.rows = RowLoRA()  # the online batch's LoRA (inference.embedded.rows)
        self.lock = threading.RLock()
        self._state: str | None = None  # an adapter name, BASE_ROW (adapters off) or MIXED

    @cached_property
    def grammar_tokenizer(self) -> Any:
        """The tokenizer as llguidance reads it, for grammars and token bytes (built on
        first use, in the decoding thread)."""
        from inference.grammar import grammar_tokenizer

        return grammar_tokenizer(self.tokenizer)

    def ensure(self, adapter: Adapter) -> str:
        """The adapter's name, loading its verified bytes on first use."""
        with self.lock:
            name = self.loaded.get(adapter.digest)
            if name is not None:
                self.loaded.move_to_end(adapter.digest)
                return name
            directory = adapter.directory or self.open_dir(adapter.digest)
            name = adapter_name(adapter.digest)
            if not self.peft:
                from peft import PeftModel

                self.model = PeftModel.from_pretrained(self.model, str(directory), adapter_name=name,
                                                       is_trainable=False).eval()
                self.peft, self._state = True, name
            else:
                self.model.load_adapter(str(directory), adapter_name=name, is_trainable=False)
            self.loaded[adapter.digest] = name
            self._evict({adapter.digest})
            self.rows.attach(self.model, list(self.loaded.values()))
            return name

    def _evict(self, keep: set[str]) -> None:
        # PEFT keeps at least one adapter; the newest stays, the oldest unused ones go.
        for digest in list(self.loaded):
            if len(self.loaded) <= self.max_adapters:
                return
            if digest not in keep and not self.held[digest]:
                name = self.loaded.pop(digest)
                if self._state == name:
                    self._state = None
                self.model.delete_adapter(name)
                self.rows.attach(self.model, list(self.loaded.values()))

    def pin(self, adapters: list[Adapter]) -> dict[str, str]:
        """Load ``adapters`` and keep them until ``unpin``: digest -> name."""
        with self.lock:
            names = {a.digest: self.ensure(a) for a in adapters}
            self.held.update(names.keys())
            return names

    def unpin(self, digests: list[str]) -> None:
        with self.lock:
            self.held.subtract(digests)
            self.held += Counter()  # drop zero counts

    @contextmanager
    def holding(self, adapters: list[Adapter]) -> Iterator[dict[str, str]]:
        names = self.pin(adapters)
        try:
            yield names
        finally:
            self.unpin(list(names))

    def row_names(self, digests: list[str | None]) -> list[str] | None:
        """PEFT's per-row adapter names for a batch (None: no adapter is loaded at all)."""
        if not self.peft:
            return None
        return [self.loaded[d] if d is not None else BASE_ROW for d in digests]

    def activate(self, state: str | None) -> None:
        """Make the model answer with adapter ``state`` (a name), the bare base (None), or
        per-row names (MIXED). Call under ``lock``."""
        if not self.peft:
            return
        wanted = BASE_ROW if state is None else state
        if wanted == self._state:
            return
        if wanted == BASE_ROW:
            self.model.base_model.disable_adapter_layers()
        else:
            if self._state == BASE_ROW:
                self.model.base_model.enable_adapter_layers()
            if wanted != MIXED:
                self.model.set_adapter(wanted)
        self._state = wanted

    def memory(self, budget: int) -> Any:
        """An offline batch's memory bound on this model (``offline.Memory``)."""
        from inference.embedded.offline import Memory

        config = self.model.config if not self.peft else self.model.base_model.model.config
        heads = int(config.num_attention_heads)
        head_dim = int(getattr(config, "head_dim", None) or config.hidden_size // heads)
        kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
        element = 2 if str(self.dtype) in ("torch.bfloat16", "torch.float16") else 4
        per_token = 2 * int(config.num_hidden_layers) * kv_heads * head_dim * element
        return Memory(budget, per_token, heads, element + 4)  # scores, their float32 softmax

    def autocast(self) -> Any:
        from trainer.ml.load import autocast_for

        return autocast_for(self.device, self.dtype)


def prompt_chars_bound(tokenizer: Any, context_length: int) -> int:
    """The most characters a conversation that fits the context can have. No token stands
    for more characters than its vocabulary entry has (a byte-level entry has one character
    per byte; a sentencepiece one, one per character), so a longer text needs more tokens
    than the context holds, without tokenising it. A normaliser can fold a few characters
    into one (NFKC), hence the margin where the tokenizer has one."""
    longest = max((len(piece) for piece in tokenizer.get_vocab()), default=1)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    margin = 4 if getattr(backend, "normalizer", None) is not None else 1
    return context_length * max(longest, 1) * margin
