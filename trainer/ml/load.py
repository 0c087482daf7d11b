"""Loading a base model, its tokenizer and an adapter: one code path for tests and serving.

Everything is loaded from local directories only (``local_files_only``), so a tiny test
model and a real Hugging Face model directory go through exactly the same calls and
nothing ever reaches for the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def base_dtype(device: torch.device) -> torch.dtype:
    # On a GPU the frozen base is held in bf16 (half the memory); the LoRA weights stay
    # fp32 (peft upcasts them) and the forward runs under bf16 autocast. On CPU everything
    # is fp32, which is what makes CPU runs bit-for-bit reproducible.
    return torch.bfloat16 if device.type == "cuda" else torch.float32


def autocast_for(device: torch.device) -> torch.autocast:
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")


def load_tokenizer(base_dir: str | Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(base_dir), local_files_only=True)
    if tokenizer.pad_token_id is None:
        # Padding is always masked out, so any id will do; eos is the usual choice.
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_base_model(base_dir: str | Path, device: torch.device) -> Any:
    from transformers import AutoModelForCausalLM

    model: Any = AutoModelForCausalLM.from_pretrained(
        str(base_dir), dtype=base_dtype(device), local_files_only=True
    )
    return model.to(device)


@dataclass(frozen=True)
class ServingModel:
    model: Any  # a PeftModel in eval mode, or the bare base model when no adapter is given
    tokenizer: Any
    device: torch.device


def load_adapter_for_serving(
    base_dir: str | Path,
    artifact_dir: str | Path | None,
    device: str | torch.device | None = None,
) -> ServingModel:
    """Load the frozen base and (unless ``artifact_dir`` is None) a LoRA adapter on it.

    The adapter is kept separate (not merged) so a Mixture-of-LoRA server can hold several
    on one base. ``artifact_dir`` is a PEFT adapter directory, e.g. from
    ``ArtifactStore.open_dir``.
    """
    from peft import PeftModel

    dev = resolve_device(device)
    model = load_base_model(base_dir, dev)
    if artifact_dir is not None:
        model = PeftModel.from_pretrained(model, str(artifact_dir), is_trainable=False)
    model.eval()
    return ServingModel(model=model, tokenizer=load_tokenizer(base_dir), device=dev)
