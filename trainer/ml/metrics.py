"""What the gate measures: the offline held-out metric (torch when called), and the shape
of a rollout harness (greedy answers; ``inference.rollouts`` has the text one).

Held-out metric. For each example ``i`` let ``l_i`` be the mean log-probability per
response token of its response given its prompt (base + adapter). A *pair* ``(i, j)`` is
two examples with ``r_i > r_j``; the metric is the reward-gap-weighted mean of their
log-likelihood margins::

    margin = sum_{r_i > r_j} (r_i - r_j) * (l_i - l_j)  /  sum_{r_i > r_j} (r_i - r_j)

Pairs are taken within the same prompt when the held-out set has any such pair
("same_prompt": the cleanest comparison, prompt difficulty cancels); otherwise across
all examples ("cross_prompt"), which is still a fair comparison between two models on
the same set. A positive margin means the model prefers what the contract rewards. The
example ``weight`` field is not used here. Per-criterion margins use the same
likelihoods with that criterion's scores as ``r``. Sums are computed in O(n log n).

Only ``heldout_metric`` needs torch, imported when called; the decision made on these
figures is ``trainer.gate.decision``'s.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any, Protocol

from trainer.ml.data import TrainingExample, examples_sha256


@dataclass(frozen=True)
class GateMetrics:
    heldout_margin: float  # NaN when there is no pair
    n_pairs: int
    pairing: str  # "same_prompt" or "cross_prompt"
    mean_loglik: float  # mean of l_i over all held-out examples: a drift alarm
    heldout_sha256: str  # which held-out set; only metrics on the same set are comparable
    per_criterion: dict[str, float] = field(default_factory=dict)
    rollout_reward: float | None = None
    n_rollouts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class RolloutHarness(Protocol):
    def generate(self, prompts: Sequence[str]) -> list[str]: ...


def _pair_sums(rewards: Sequence[float], logliks: Sequence[float]) -> tuple[float, float, int]:
    """(sum (r_i-r_j)(l_i-l_j), sum (r_i-r_j), count) over pairs with r_i > r_j."""
    num = den = 0.0
    count = 0
    below_n, below_r, below_l, below_rl = 0, 0.0, 0.0, 0.0  # sums over strictly lower r
    ranked = sorted(zip(rewards, logliks, strict=True), key=lambda x: x[0])
    for r, group in groupby(ranked, key=lambda x: x[0]):
        items = list(group)
        for _, ll in items:
            num += below_n * r * ll - r * below_l - ll * below_r + below_rl
            den += below_n * r - below_r
            count += below_n
        for _, ll in items:
            below_n, below_r, below_l, below_rl = (
                below_n + 1, below_r + r, below_l + ll, below_rl + r * ll
            )
    return num, den, count


def loglik_margin(
    prompts: Sequence[Hashable], rewards: Sequence[float], logliks: Sequence[float]
) -> tuple[float, int, str]:
    """(margin, number of pairs, pairing) as defined in the module docstring; ``prompts``
    says which examples answer the same prompt (any key: text, or text and messages)."""
    by_prompt: dict[Hashable, list[int]] = {}
    for i, prompt in enumerate(prompts):
        by_prompt.setdefault(prompt, []).append(i)
    num = den = 0.0
    count = 0
    for idx in by_prompt.values():
        n, d, c = _pair_sums([rewards[i] for i in idx], [logliks[i] for i in idx])
        num, den, count = num + n, den + d, count + c
    pairing = "same_prompt"
    if count == 0:
        num, den, count = _pair_sums(rewards, logliks)
        pairing = "cross_prompt"
    return (num / den if den > 0 else math.nan), count, pairing


def heldout_metric(
    base_dir: str | Path,
    adapter_dir: str | Path | None,
    examples: Sequence[TrainingExample],
    *,
    criteria: Mapping[str, Sequence[float]] | None = None,
    max_len: int = 256,
    device: Any = None,
) -> GateMetrics:
    """Held-out metrics of base + adapter (the bare base when ``adapter_dir`` is None).

    ``criteria`` maps a criterion name to one score per example (aligned with
    ``examples``); each gets its own margin in ``per_criterion``.
    """
    from trainer.ml.load import load_adapter_for_serving
    from trainer.ml.scoring import response_logliks

    if not examples:
        raise ValueError("the held-out set is empty")
    serving = load_adapter_for_serving(base_dir, adapter_dir, device)
    logliks = response_logliks(serving, examples, max_len)
    prompts = [ex.prompt_key() for ex in examples]  # the same words after another conversation differ
    margin, n_pairs, pairing = loglik_margin(prompts, [ex.reward for ex in examples], logliks)
    per_criterion = {
        name: loglik_margin(prompts, scores, logliks)[0]
        for name, scores in sorted((criteria or {}).items())
    }
    return GateMetrics(
        heldout_margin=margin, n_pairs=n_pairs, pairing=pairing,
        mean_loglik=sum(logliks) / len(logliks), heldout_sha256=examples_sha256(examples),
        per_criterion=per_criterion,
    )
