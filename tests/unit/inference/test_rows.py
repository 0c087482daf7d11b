"""The online batch's stacked LoRA computes what PEFT computes: each row's logits with its
own adapter (or none), whichever adapters share the batch."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


def test_each_row_gets_its_own_adapter_as_peft_gives_it(tmp_path: Path) -> None:
    from inference.embedded.pool import BASE_ROW, MIXED, ModelPool
    from inference.types import Adapter, BaseModel
    from tests.serving_world import lora_dir
    from trainer.ml.digest import weights_sha256
    from trainer.ml.tiny_model import build_tiny_base_model
    from trainer.registry.artifacts import dir_sha256

    base = build_tiny_base_model(tmp_path / "base", seed=0)
    dirs = [lora_dir(base, tmp_path / f"a{s}", s) for s in range(3)]
    pool = ModelPool(BaseModel("tiny", str(base), weights_sha256(base)), torch.device("cpu"),
                     "fp32", 8, lambda digest: tmp_path)
    names = [pool.ensure(Adapter(dir_sha256(d), d)) for d in dirs]
    rows = [names[0], None, names[2], names[1], names[0]]
    ids = torch.randint(0, 250, (len(rows), 12), generator=torch.Generator().manual_seed(0))

    with torch.inference_mode():
        pool.activate(MIXED)
        peft = pool.model(input_ids=ids, adapter_names=[n or BASE_ROW for n in rows]).logits
        pool.rows.plan = pool.rows.plan_for(rows, "cpu")
        try:
            stacked = pool.model(input_ids=ids).logits
        finally:
            pool.rows.plan = None
        alone = []
        for i, name in enumerate(rows):
            pool.activate(name)
            alone.append(pool.model(input_ids=ids[i:i + 1]).logits[0])
    assert torch.allclose(stacked, peft, atol=1e-5)
    assert all(torch.allclose(stacked[i], alone[i], atol=1e-5) for i in range(len(rows)))
    assert not torch.allclose(stacked[0], stacked[1], atol=1e-3)  # the adapter matters
