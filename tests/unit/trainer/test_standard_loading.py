"""An adapter the trainer writes travels: moved to another directory with its base, it
loads with the stock tools, offline, and its bytes name no path of the machine that
trained it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from trainer.ml.digest import weights_sha256  # noqa: E402
from trainer.ml.portable import BASE_NAME_KEY, BASE_SHA_KEY, metadata, set_metadata  # noqa: E402
from trainer.registry.artifacts import dir_sha256  # noqa: E402

pytestmark = pytest.mark.train


def test_the_adapter_is_the_peft_pair_naming_its_base_portably(root_adapter: Path, tiny_base: Path) -> None:
    assert sorted(p.name for p in root_adapter.iterdir()) == ["adapter_config.json",
                                                              "adapter_model.safetensors"]
    config = json.loads((root_adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == tiny_base.name  # a name, not a path
    pinned = metadata(root_adapter / "adapter_model.safetensors")
    assert pinned[BASE_NAME_KEY] == tiny_base.name
    assert pinned[BASE_SHA_KEY] == weights_sha256(tiny_base)
    for path in root_adapter.iterdir():
        assert str(tiny_base.parent) not in path.read_bytes().decode("latin-1")


def test_moved_with_its_base_it_loads_with_auto_peft_and_peft_model(
        root_adapter: Path, tiny_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from peft import AutoPeftModelForCausalLM, PeftModel
    from transformers import AutoModelForCausalLM

    elsewhere = tmp_path / "another-host"
    shutil.copytree(root_adapter, elsewhere / "adapter")
    shutil.copytree(tiny_base, elsewhere / tiny_base.name)  # the base, fetched by its name
    monkeypatch.chdir(elsewhere)
    model = AutoPeftModelForCausalLM.from_pretrained("adapter", local_files_only=True)
    assert isinstance(model, PeftModel)
    assert any("lora_" in name for name, _ in model.named_parameters())
    base = AutoModelForCausalLM.from_pretrained(os.fspath(elsewhere / tiny_base.name))
    given = PeftModel.from_pretrained(base, os.fspath(elsewhere / "adapter"))
    assert any("lora_" in name for name, _ in given.named_parameters())


def test_byte_identical_weights_have_one_address_in_any_directory(root_adapter: Path,
                                                                  tmp_path: Path) -> None:
    copies = [tmp_path / "data-a" / "x", tmp_path / "data-b" / "deep" / "y"]
    for copy in copies:
        shutil.copytree(root_adapter, copy)
    assert {dir_sha256(c) for c in copies} == {dir_sha256(root_adapter)}
    # the pin is part of the weights file: another base is another adapter
    set_metadata(copies[1] / "adapter_model.safetensors", {BASE_SHA_KEY: "0" * 64})
    assert dir_sha256(copies[1]) != dir_sha256(root_adapter)
    from safetensors.torch import load_file  # the tensors survived the header rewrite

    before = load_file(os.fspath(root_adapter / "adapter_model.safetensors"))
    after = load_file(os.fspath(copies[1] / "adapter_model.safetensors"))
    assert before.keys() == after.keys() and all(bool((before[k] == after[k]).all()) for k in before)
