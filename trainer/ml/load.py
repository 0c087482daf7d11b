"""Loading a base model, its tokenizer and an adapter: one code path for tests and serving.

Everything is loaded from local directories only (``local_files_only``), so a tiny test
model and a real Hugging Face model directory go through exactly the same calls and
nothing ever reaches for the network.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def base_dtype(device: torch.device, precision: str = "auto") -> torch.dtype:
    """The frozen base's dtype. ``auto``: bf16 on a GPU (half the memory), fp32 on a CPU
    (what makes CPU runs bit-for-bit reproducible across machines). ``bf16`` on a CPU only
    where its matrix products run on the CPU's own bf16 instructions
    (``cpu_multiplies_bf16``: AVX-512 or AMX, recent Xeons, where they are several times
    faster than fp32); elsewhere torch falls back to a scalar bf16 product (one product six
    times slower than fp32, a training step 23 times), so ``bf16`` there means fp32. LoRA
    weights stay fp32 either way (peft upcasts them) and the forward runs under bf16
    autocast."""
    if precision == "fp32":
        return torch.float32
    if device.type == "cuda" or (precision == "bf16" and cpu_multiplies_bf16()):
        return torch.bfloat16
    return torch.float32


@functools.cache  # the CPU does not change; the serving engine asks on every request
def cpu_multiplies_bf16() -> bool:
    """Whether torch's bf16 matrix products on this CPU go to oneDNN's bf16 kernels (the
    test torch itself makes: AVX-512 BW/VL/DQ on x86, or bf16 on Arm), not to the scalar
    fallback. On a 2-core AMD EPYC (AVX2) a [2048 x 576] x [576 x 1536] product took 863 ms
    in bf16 and 140 ms in fp32 (2026-12-05, torch 2.15, one thread)."""
    try:
        return bool(torch.backends.mkldnn.is_available()
                    and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch without the op: its capability name
        return torch.backends.cpu.get_cpu_capability().startswith("AVX512")


def autocast_for(device: torch.device, dtype: torch.dtype | None = None) -> torch.autocast:
    """bf16 autocast where the base is bf16 (by default: on a GPU)."""
    dtype = dtype or base_dtype(device)
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=dtype == torch.bfloat16)


def load_tokenizer(base_dir: str | Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(base_dir), local_files_only=True)
    if tokenizer.pad_token_id is None:
        # Padding is always masked out, so any id will do; eos is the usual choice.
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_base_model(base_dir: str | Path, device: torch.device, precision: str = "auto",
                    attention: str | None = None) -> Any:
    """The frozen base on ``device``; ``attention`` picks the implementation (None: the
    library's default, sdpa)."""
    from transformers import AutoModelForCausalLM

    extra = {"attn_implementation": attention} if attention else {}
    model: Any = AutoModelForCausalLM.from_pretrained(
        str(base_dir), dtype=base_dtype(device, precision), local_files_only=True, **extra
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
