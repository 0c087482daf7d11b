from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

import torch  # noqa: E402

from tests.unit.trainer.conftest import TOY_FACTS, toy_examples  # noqa: E402
from trainer.gate.decision import judge  # noqa: E402
from trainer.gate.policy import GatePolicy  # noqa: E402
from trainer.ml.load import load_adapter_for_serving  # noqa: E402
from trainer.ml.lora import HyperParams, train_successor  # noqa: E402
from trainer.ml.metrics import heldout_metric  # noqa: E402
from trainer.registry.artifacts import LocalArtifactStore  # noqa: E402

pytestmark = pytest.mark.train


def _logits(model_dir: Path, adapter: Path | None) -> torch.Tensor:
    serving = load_adapter_for_serving(model_dir, adapter, device="cpu")
    ids = torch.tensor([[257, 97, 98, 99]])
    with torch.no_grad():
        return serving.model(input_ids=ids).logits


def test_an_adapter_from_the_artifact_store_changes_the_model(
    tmp_path: Path, tiny_base: Path, root_adapter: Path
) -> None:
    store = LocalArtifactStore(tmp_path / "store")
    stored = store.open_dir(store.put_dir(root_adapter).sha256)

    with_adapter = _logits(tiny_base, stored)

    assert not torch.allclose(with_adapter, _logits(tiny_base, None))
    assert torch.equal(with_adapter, _logits(tiny_base, root_adapter))


def test_training_on_rewarded_responses_raises_the_margin_and_passes_the_gate(
    tmp_path: Path, tiny_base: Path
) -> None:
    hyper = HyperParams(steps=25, learning_rate=2e-2, min_reward=0.5)
    adapter = train_successor(tiny_base, None, toy_examples(), hyper, tmp_path / "a").adapter_dir
    helpful = [1.0 if ex.reward > 0.5 else 0.0 for ex in toy_examples()]

    base = heldout_metric(tiny_base, None, toy_examples(), criteria={"helpful": helpful})
    trained = heldout_metric(tiny_base, adapter, toy_examples(), criteria={"helpful": helpful})
    decision = judge(trained, base, GatePolicy(margin=0.5, regression_tolerance={"*": 0.0}))

    assert (trained.n_pairs, trained.pairing) == (len(TOY_FACTS), "same_prompt")
    assert trained.heldout_margin > base.heldout_margin + 0.5
    assert trained.per_criterion["helpful"] == pytest.approx(trained.heldout_margin)
    assert decision["promote"], decision["reason"]
    assert not judge(base, trained, GatePolicy())["promote"]


def test_greedy_rollouts_are_deterministic_text(tiny_base: Path, root_adapter: Path) -> None:
    from inference.embedded.engine import EmbeddedEngine
    from inference.rollouts import TextRolloutHarness
    from trainer.gate.rollout import RolloutTarget

    engine = EmbeddedEngine(lambda digest: root_adapter, "cpu")
    harness = TextRolloutHarness(engine, RolloutTarget(tiny_base, root_adapter, 5, device="cpu"))

    first = harness.generate(["Sky colour?", "2+2="])

    assert len(first) == 2 and all(isinstance(r, str) for r in first)
    assert harness.generate(["Sky colour?", "2+2="]) == first
