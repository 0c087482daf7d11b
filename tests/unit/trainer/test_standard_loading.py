"""An adapter the trainer writes loads with the standard tools, offline, by its config alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from trainer.ml.digest import weights_sha256  # noqa: E402

pytestmark = pytest.mark.train


def test_auto_peft_model_loads_the_adapter_from_its_directory(root_adapter: Path, tiny_base: Path) -> None:
    from peft import AutoPeftModelForCausalLM, PeftModel

    config = json.loads((root_adapter / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(tiny_base.resolve())
    info = json.loads((root_adapter / "hcp_training.json").read_text())
    assert info["base_weights_sha256"] == weights_sha256(tiny_base)
    assert info["base_model_path"] == str(tiny_base.resolve())

    model = AutoPeftModelForCausalLM.from_pretrained(str(root_adapter), local_files_only=True)

    assert isinstance(model, PeftModel)
    assert any("lora_" in name for name, _ in model.named_parameters())
