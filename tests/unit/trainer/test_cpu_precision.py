"""``bf16`` asked on a CPU runs in bf16 only where the CPU multiplies bf16 itself: on one
without (AVX2 only), torch's scalar bf16 product made a training step about twenty times
slower than fp32, so there the base loads, trains and serves in fp32, and the run says so."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

import torch  # noqa: E402

import trainer.ml.load as load  # noqa: E402
from tests.unit.trainer.conftest import toy_examples  # noqa: E402
from trainer.ml.lora import HyperParams, prepare_trainable_model, train_successor  # noqa: E402

pytestmark = pytest.mark.train

CPU = torch.device("cpu")


@pytest.mark.parametrize(("native", "expected"), [(True, torch.bfloat16), (False, torch.float32)])
def test_bf16_on_a_cpu_follows_what_the_cpu_multiplies(
        monkeypatch: pytest.MonkeyPatch, native: bool, expected: torch.dtype) -> None:
    monkeypatch.setattr(load, "cpu_multiplies_bf16", lambda: native)
    assert load.base_dtype(CPU, "bf16") == expected
    assert load.base_dtype(CPU, "fp32") == torch.float32
    assert load.base_dtype(CPU, "auto") == torch.float32


@pytest.mark.parametrize(("native", "dtype", "recorded"),
                         [(True, torch.bfloat16, "bfloat16"), (False, torch.float32, "float32")])
def test_a_run_trains_and_records_the_dtype_it_used(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tiny_base: Path, native: bool,
        dtype: torch.dtype, recorded: str) -> None:
    monkeypatch.setattr(load, "cpu_multiplies_bf16", lambda: native)
    hyper = HyperParams(steps=1, min_reward=0.5, batch_size=4, precision="bf16")
    model = prepare_trainable_model(tiny_base, None, hyper, CPU)
    frozen = {p.dtype for p in model.parameters() if not p.requires_grad}

    result = train_successor(tiny_base, None, toy_examples(), hyper, tmp_path / "a")

    assert frozen == {dtype}
    assert result.dtype == recorded and result.summary()["dtype"] == recorded


def test_the_check_agrees_with_the_cpu_capability_torch_reports() -> None:
    capability = torch.backends.cpu.get_cpu_capability()
    if not capability.startswith(("AVX2", "AVX512")):
        pytest.skip(f"not an x86 capability: {capability}")
    assert load.cpu_multiplies_bf16() == capability.startswith("AVX512")
