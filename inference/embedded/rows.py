"""Mixed-adapter rows at the cost of one adapter: how the online batch applies LoRA.

PEFT's mixed batches (``adapter_names``) register a hook on every LoRA layer for each
forward pass and, in each layer, loop over the batch's adapters in Python, gathering and
scattering each adapter's rows: a 4-adapter batch decoded at 0.69 of a one-adapter batch
on a small model (0.84 on SmolLM2-135M). Here each LoRA layer keeps its loaded adapters
stacked (slot 0 is zeros: the bare base), and a step gathers each row's slot and applies
all rows' adapters in two batched products, the shape of Punica's and S-LoRA's BGMV
kernel: the cost does not depend on how many adapters share the batch.

A ``Plan`` (each row's slot) is set on the pool's ``RowLoRA`` for one forward pass, under
the pool's lock; without one, every LoRA layer is PEFT's own (the offline samplers, whose
draws the golden test holds). Adapters with a PEFT variant (DoRA and the like) are not
stacked: a batch that needs one goes through PEFT's ``adapter_names``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MethodType
from typing import Any

import torch


@dataclass(frozen=True)
class Plan:
    slots: torch.Tensor  # each row's slot (0: no adapter)


class RowLoRA:
    """The LoRA layers of one PEFT model, patched to read a per-row plan."""

    def __init__(self) -> None:
        self.plan: Plan | None = None
        self.names: list[str] = []  # slot i + 1 holds names[i]
        self.version = 0  # bumped when the adapters change: stacks are rebuilt on next use

    def attach(self, model: Any, names: list[str]) -> None:
        """Patch every LoRA layer of ``model`` not patched yet; ``names``: the adapters now
        loaded, in slot order (those with a variant, or on a layer that is not a linear
        one, are left to PEFT)."""
        from peft.tuners.lora.layer import Linear, LoraLayer

        left: set[str] = set()
        for module in model.modules():
            if isinstance(module, LoraLayer) and not isinstance(module, Linear):
                left |= set(module.lora_A) | set(getattr(module, "lora_embedding_A", {}))
            elif isinstance(module, Linear):
                left |= set(module.lora_variant)
                if getattr(module, "_hcp_rows", None) is not self:
                    layer: Any = module  # attributes of our own on PEFT's layer
                    layer._hcp_rows, layer._hcp_stack = self, None
                    layer.forward = MethodType(_forward(layer.forward), layer)
        self.names = [n for n in names if n not in left]
        self.version += 1

    def plan_for(self, names: list[str | None], device: Any) -> Plan | None:
        """Each row's slot; None when a row's adapter is not stacked here."""
        slot = {name: i + 1 for i, name in enumerate(self.names)}
        if any(n is not None and n not in slot for n in names):
            return None
        return Plan(torch.tensor([slot[n] if n is not None else 0 for n in names], device=device))


def _forward(original: Callable[..., Any]) -> Callable[..., Any]:
    def forward(self: Any, x: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        rows: RowLoRA = self._hcp_rows
        plan = rows.plan
        if plan is None or x.dim() != 3 or kwargs.get("adapter_names") is not None:
            return original(x, *args, **kwargs)
        result = self.base_layer(x, *args, **kwargs)
        a, b = _stack(self, rows)
        if a is None or b is None:
            return result
        h = torch.bmm(x.to(a.dtype), a.index_select(0, plan.slots).transpose(1, 2))
        delta = torch.bmm(h, b.index_select(0, plan.slots).transpose(1, 2))
        return result + delta.to(result.dtype)

    return forward


def _stack(module: Any, rows: RowLoRA) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """This layer's adapters stacked: A [slots, r, in], B x scaling [slots, out, r]."""
    cached = module._hcp_stack
    if cached is not None and cached[0] == rows.version:
        return cached[1], cached[2]
    present = [n for n in rows.names if n in module.lora_A and n not in module.lora_variant]
    if not present:
        module._hcp_stack = (rows.version, None, None)
        return None, None
    first = module.lora_A[present[0]].weight
    rank = max(module.lora_A[n].weight.shape[0] for n in present)
    out = module.lora_B[present[0]].weight.shape[0]
    a = torch.zeros(len(rows.names) + 1, rank, first.shape[1], dtype=first.dtype, device=first.device)
    b = torch.zeros(len(rows.names) + 1, out, rank, dtype=first.dtype, device=first.device)
    for slot, name in enumerate(rows.names, start=1):
        if name in present:
            wa, wb = module.lora_A[name].weight, module.lora_B[name].weight
            a[slot, :wa.shape[0]] = wa
            b[slot, :, :wb.shape[1]] = wb * module.scaling[name]
    module._hcp_stack = (rows.version, a, b)
    return a, b
