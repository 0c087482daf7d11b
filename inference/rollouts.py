"""The gate's rollouts on the engine: its targets as the engine names bytes, and the text
rollout harness (``rollout_harness = "text"``: greedy answers to held-out prompts).

The gate (``trainer.gate``) names a model by directory (``RolloutTarget``); here it
becomes a ``Target`` by digests: the base's weights digest (the registry's, or hashed now
when the caller did not say) and the adapter's artifact digest (``dir_sha256``, the
address the artifact store gives the same files), so the memo and the pool key on bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from inference.engine import Engine
from inference.memo import provenance
from inference.types import Adapter, BaseModel, Prompt, SampleJob, Target
from trainer.gate.rollout import RolloutTarget
from trainer.gate.shapes import MemoProvenance

TEXT_BATCH_ROWS = 64


def engine_target(target: RolloutTarget) -> Target:
    from trainer.ml.digest import weights_sha256
    from trainer.registry.artifacts import dir_sha256

    base_dir = Path(target.base_dir)
    base = BaseModel(target.base_name or base_dir.name, str(base_dir),
                     target.base_sha256 or weights_sha256(base_dir))
    adapter = None
    if target.adapter_dir is not None:
        adapter = Adapter(target.adapter_sha256 or dir_sha256(target.adapter_dir), target.adapter_dir)
    return Target(base, adapter, target.precision, target.device)


class TextRolloutHarness:
    """Greedy answers with base + adapter, batched on the engine.

    A prompt longer than ``max_prompt_tokens`` (or than the model's context less the new
    tokens) loses tokens from its start, as in training: its end is what is answered.
    """

    def __init__(self, engine: Engine, target: RolloutTarget) -> None:
        self.engine, self.target = engine, target
        self.memo: MemoProvenance | None = None

    def generate(self, prompts: Sequence[str]) -> list[str]:
        room = self.target.max_prompt_tokens or 1 << 30
        job = SampleJob(engine_target(self.target), tuple(Prompt(p) for p in prompts),
                        self.target.max_new_tokens, batch_rows=TEXT_BATCH_ROWS,
                        max_prompt_tokens=room)
        samples = self.engine.sample(job)
        self.memo = provenance(samples)
        return [s.text for s in samples]

    def memo_record(self) -> MemoProvenance | None:
        """Where the last answers came from (``inference.memo.provenance``)."""
        return self.memo


def text_harness(engine: Engine, target: RolloutTarget) -> TextRolloutHarness:
    return TextRolloutHarness(engine, target)
