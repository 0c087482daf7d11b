from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainer.ml.tiny_model import build_tiny_base_model, weights_sha256  # noqa: E402

pytestmark = pytest.mark.train


def test_same_seed_gives_byte_identical_weights(tmp_path: Path, tiny_base: Path) -> None:
    again = build_tiny_base_model(tmp_path / "again", seed=0)

    assert weights_sha256(again) == weights_sha256(tiny_base)
    assert (again / "model.safetensors").read_bytes() == (
        tiny_base / "model.safetensors"
    ).read_bytes()


def test_another_seed_gives_other_weights(tmp_path: Path, tiny_base: Path) -> None:
    other = build_tiny_base_model(tmp_path / "other", seed=1)

    assert weights_sha256(other) != weights_sha256(tiny_base)


def test_tokenizer_loads_offline_and_maps_bytes_to_ids(tiny_base: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_base), local_files_only=True)
    text = "héllo\n wörld {json: 1}"

    ids = tokenizer(text, add_special_tokens=False)["input_ids"]

    assert ids == list(text.encode())
    assert tokenizer.decode(ids) == text
    assert {tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id} == {
        256, 257, 258
    }


def test_model_loads_as_an_ordinary_causal_lm(tiny_base: Path) -> None:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_base), local_files_only=True)

    assert model.config.vocab_size == 259
    assert model.config.num_hidden_layers == 2
