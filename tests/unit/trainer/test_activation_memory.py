"""A training step keeps only each layer's input for its backward pass (the layers'
activations are recomputed, ``trainer.ml.lora.recompute_activations``), the
vocabulary-wide work is done a block of rows at a time (``trainer.ml.objective``,
``trainer.ml.anchor``), and both compute exactly the bits of the whole computation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import trainer.ml.load as lora_load  # noqa: E402
import trainer.ml.lora as lora  # noqa: E402
from tests.unit.trainer.conftest import toy_examples  # noqa: E402
from trainer.ml.anchor import token_kl  # noqa: E402
from trainer.ml.data import encode_examples  # noqa: E402
from trainer.ml.hyper import HyperParams  # noqa: E402
from trainer.ml.load import load_tokenizer  # noqa: E402
from trainer.ml.objective import row_blocks, token_nll  # noqa: E402
from trainer.ml.plan import sft_loss  # noqa: E402

pytestmark = pytest.mark.train

CPU = torch.device("cpu")


def _step(tiny_base: Path, hyper: HyperParams
          ) -> tuple[torch.Tensor, dict[str, torch.Tensor], list[torch.Tensor]]:
    """One training step as ``train_successor`` takes it: (loss, LoRA gradients, every
    tensor autograd kept for the backward pass)."""
    torch.manual_seed(hyper.seed)
    model = lora.prepare_trainable_model(tiny_base, None, hyper, CPU)
    model.train()
    batch = encode_examples(load_tokenizer(tiny_base), toy_examples(), hyper.max_len,
                            [1.0] * len(toy_examples()))
    kept: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> Any:
        kept.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = sft_loss(model, batch, CPU, lora.base_dtype(CPU, hyper.precision))
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return loss.detach(), grads, kept


def _activation_bytes(kept: list[torch.Tensor]) -> int:
    # Parameters (the frozen weights a matmul keeps a reference to) are not activations.
    return sum(t.numel() * t.element_size() for t in kept if not isinstance(t, torch.nn.Parameter))


@pytest.mark.parametrize("precision", ["bf16", "fp32"])  # eager attention on a CPU in bf16
def test_a_training_step_keeps_a_fraction_of_its_activations_and_the_same_bits(
        tiny_base: Path, monkeypatch: pytest.MonkeyPatch, precision: str) -> None:
    # bf16 where the CPU has no bf16 products too (it would load fp32): the eager path is tested
    monkeypatch.setattr(lora_load, "cpu_multiplies_bf16", lambda: True)
    hyper = HyperParams(precision=precision, batch_size=8, max_len=64, min_reward=0.5, seed=3)
    loss, grads, kept = _step(tiny_base, hyper)
    monkeypatch.setattr(lora, "recompute_activations", lambda model: None)
    all_loss, all_grads, all_kept = _step(tiny_base, hyper)

    heads = lora.load_base_model(tiny_base, CPU).config.num_attention_heads
    scores = [t for t in kept if t.dim() == 4 and t.shape[1] == heads and t.shape[2] == t.shape[3] > 1]
    assert scores == []
    assert _activation_bytes(kept) < _activation_bytes(all_kept) / 2
    assert torch.equal(loss, all_loss)
    assert grads.keys() == all_grads.keys() and grads
    assert all(torch.equal(grads[n], all_grads[n]) for n in grads)


def test_row_blocks_cover_the_rows_and_never_end_on_a_lone_row() -> None:
    assert row_blocks(0) == [0]
    assert row_blocks(256) == [256]
    assert row_blocks(300) == [256, 44]
    assert row_blocks(513) == [256, 257]
    assert sum(row_blocks(5000)) == 5000


@pytest.mark.parametrize("threads", [1, 2])
def test_nll_and_kl_by_blocks_of_rows_are_the_whole_tensor_computations_bit_for_bit(
        threads: int) -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        g = torch.Generator().manual_seed(0)
        logits = torch.randn(513, 3000, generator=g).bfloat16().requires_grad_()
        reference = torch.randn(513, 3000, generator=g).bfloat16()
        targets = torch.randint(0, 3000, (513,), generator=g)
        weights = torch.rand(513, generator=g)

        whole = F.cross_entropy(logits.float(), targets, reduction="none")
        (whole * weights).sum().backward()
        whole_grad, logits.grad = logits.grad, None
        by_blocks = token_nll(logits, targets)
        (by_blocks * weights).sum().backward()
        logp, logq = F.log_softmax(logits.detach().float(), -1), F.log_softmax(reference.float(), -1)

        assert torch.equal(by_blocks, whole)
        assert torch.equal(logits.grad, whole_grad)
        assert torch.equal(token_kl(logits.detach(), reference), (logp.exp() * (logp - logq)).sum(-1))
    finally:
        torch.set_num_threads(before)
