"""One base model, many adapters: what the harness serves every specialist with.

The base is loaded once; each specialist's adapter is loaded beside it under its own name
(PEFT ``load_adapter``) and switched with ``set_adapter`` (milliseconds) instead of
reloading the base (a second, and the base's memory again per copy). An adapter is loaded
once per artifact hash: a new production version is a new name, the old one is deleted.
The bare base serves where no adapter is in production (``<specialist>@0``), with the
adapters disabled.

Device and precision are picked automatically (``trainer.ml.load``): CUDA when present
(bf16), else the CPU, in the precision asked for (bf16 is what the demo trains and
serves in on CPU, so that serving and the gate see the same numbers).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any


class ModelPool:
    def __init__(self, base_dir: str | Path, device: str | None = None,
                 precision: str = "auto") -> None:
        from trainer.ml.load import load_base_model, load_tokenizer, resolve_device

        self.base_dir = Path(base_dir)
        self.device = resolve_device(device)
        self.precision = precision
        self.tokenizer = load_tokenizer(base_dir)
        self.model: Any = load_base_model(base_dir, self.device, precision).eval()
        self._peft = False
        self.loaded: dict[str, str] = {}  # adapter name -> artifact sha256

    def ensure(self, adapter_dir: Path, sha256: str) -> str:
        """The adapter's name in the model, loading it on first use (``sha256``: the
        artifact's address, which names it)."""
        name = f"a{sha256[:16]}"
        if name in self.loaded:
            return name
        from peft import PeftModel

        if not self._peft:
            self.model = PeftModel.from_pretrained(self.model, str(adapter_dir), adapter_name=name,
                                                   is_trainable=False).eval()
            self._peft = True
        else:
            self.model.load_adapter(str(adapter_dir), adapter_name=name, is_trainable=False)
        self.loaded[name] = sha256
        return name

    def forget(self, keep: set[str]) -> None:
        """Unload adapters whose hash is not in ``keep`` (replaced production versions);
        the first one loaded stays (PEFT needs one adapter at least)."""
        names = list(self.loaded)
        for name in names[1:]:
            if self.loaded[name] not in keep:
                self.model.delete_adapter(name)
                del self.loaded[name]

    @contextmanager
    def serving(self, adapter: str | None) -> Iterator[Any]:
        """The model with ``adapter`` active (None: the bare base)."""
        if adapter is None:
            context = self.model.disable_adapter() if self._peft else nullcontext()
            with context:
                yield self.model
            return
        self.model.set_adapter(adapter)
        yield self.model
