"""Training a LoRA successor adapter from its parent (or a fresh root) on a frozen base.

The objective is reward-weighted SFT, defined in ``trainer.ml.data``, or with
``objective="dpo"`` the preference loss of ``trainer.ml.preference``. On CPU a run is
bit-for-bit reproducible: fp32, a seeded LoRA initialisation, a seeded batch order, no
dropout and ``torch.use_deterministic_algorithms`` for the duration of the run.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from trainer.ml.data import (
    EncodedExamples,
    TrainingExample,
    encode_examples,
    preference_pairs,
    select_answers,
    select_weighted,
)
from trainer.ml.digest import weights_sha256
from trainer.ml.hyper import OBJECTIVES, HyperParams
from trainer.ml.load import (
    autocast_for,
    base_dtype,
    load_base_model,
    load_tokenizer,
    resolve_device,
)
from trainer.ml.objective import batch_schedule, sliced_weighted_nll
from trainer.ml.portable import make_portable
from trainer.ml.preference import dpo_batches, dpo_step_loss

__all__ = ["OBJECTIVES", "HyperParams", "TrainResult", "prepare_trainable_model", "train_successor"]

OnStep = Callable[[int, int, float], None]  # (step starting at 1, total steps, loss)


@dataclass(frozen=True)
class TrainResult:
    adapter_dir: Path
    steps: int
    tokens_seen: int  # input tokens (prompt + response) through the forward pass
    tokens_per_s: float  # tokens_seen / train_seconds
    train_seconds: float  # the optimisation loop only: no loading or saving
    loss_first: float
    loss_last: float
    loss_min: float
    loss_mean: float
    examples_used: int
    examples_dropped: int
    device: str
    losses: tuple[float, ...] = field(repr=False)
    objective: str = "sft"
    pairs_used: int = 0  # preference pairs (dpo only)

    def summary(self) -> dict[str, Any]:
        """JSON-ready figures for a training-run event (the full curve left out)."""
        out = asdict(self)
        out["adapter_dir"] = str(self.adapter_dir)
        del out["losses"]
        return out


@contextlib.contextmanager
def _reproducible(seed: int, device: torch.device) -> Iterator[None]:
    """Seed torch and, on CPU, demand deterministic kernels; restore both on exit."""
    devices = [device.index or 0] if device.type == "cuda" else []
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    was_filling = torch.utils.deterministic.fill_uninitialized_memory  # type: ignore[attr-defined]
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        # CUDA would also need CUBLAS_WORKSPACE_CONFIG; GPU runs are reproducible only
        # up to kernel non-determinism, which the gate tolerates.
        torch.use_deterministic_algorithms(device.type == "cpu")
        # Deterministic mode also NaN-fills every new tensor, a guard against reading
        # uninitialised memory that costs throughput and that no op here needs.
        torch.utils.deterministic.fill_uninitialized_memory = False  # type: ignore[attr-defined]
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was_deterministic)
            torch.utils.deterministic.fill_uninitialized_memory = was_filling  # type: ignore[attr-defined]


def prepare_trainable_model(
    base_dir: str | Path, parent_adapter_dir: str | Path | None, hyper: HyperParams,
    device: torch.device,
) -> Any:
    """The base with a trainable LoRA: the parent's weights, or a fresh seeded one.

    A successor inherits its parent's LoRA shape (rank, alpha, target modules); the
    corresponding fields of ``hyper`` apply to roots only. Call inside ``_reproducible``.
    """
    from peft import LoraConfig, PeftModel, get_peft_model

    dtype = base_dtype(device, hyper.precision)
    # Eager attention on a CPU in bf16: torch's CPU flash-attention backward in bf16 took a
    # third of each step; sdpa stays the serving choice.
    eager = device.type == "cpu" and dtype == torch.bfloat16
    base = load_base_model(base_dir, device, hyper.precision, "eager" if eager else None)
    if parent_adapter_dir is not None:
        return PeftModel.from_pretrained(base, str(parent_adapter_dir), is_trainable=True)
    config = LoraConfig(
        r=hyper.rank,
        lora_alpha=hyper.alpha,
        target_modules=list(hyper.target_modules),
        lora_dropout=0.0,  # dropout would need its own RNG stream and breaks reproducibility
        task_type="CAUSAL_LM",
    )
    return get_peft_model(base, config)


def _save_adapter(model: Any, out_dir: Path, base_dir: str | Path) -> None:
    # save_embedding_layers=False: "auto" would look the base up on the Hub.
    model.save_pretrained(str(out_dir), save_embedding_layers=False)
    _sort_config_sets(out_dir / "adapter_config.json")
    # The PEFT pair only, naming the base portably (its directory's name; the runner names
    # it by its registry name) and pinning its weights (trainer.ml.portable).
    make_portable(out_dir, Path(base_dir).name, weights_sha256(base_dir))


def _sort_config_sets(path: Path) -> None:
    # peft keeps target_modules as a set and writes it in hash order, which changes with
    # PYTHONHASHSEED: sorted, the same run gives the same bytes in every process.
    config = json.loads(path.read_text())
    for key in ("target_modules", "exclude_modules"):
        if isinstance(config.get(key), list):
            config[key] = sorted(config[key])
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _loss_summary(losses: Sequence[float]) -> dict[str, float]:
    if not losses:
        return {"loss_first": math.nan, "loss_last": math.nan, "loss_min": math.nan,
                "loss_mean": math.nan}
    return {"loss_first": losses[0], "loss_last": losses[-1], "loss_min": min(losses),
            "loss_mean": sum(losses) / len(losses)}


def train_successor(
    base_model_dir: str | Path,
    parent_adapter_dir: str | Path | None,
    examples: Sequence[TrainingExample],
    hyper: HyperParams,
    out_dir: str | Path,
    device: str | torch.device | None = None,
    on_step: OnStep | None = None,
) -> TrainResult:
    """Train a successor adapter and save it (PEFT format) into ``out_dir``.

    With ``parent_adapter_dir`` None a fresh seeded LoRA is trained (a root version);
    otherwise training starts from the parent's adapter weights. ``out_dir`` must be
    absent or empty. It gets the PEFT pair only (``trainer.ml.portable``): the config names
    the base by its directory's name, the weights file pins the base's weight hash.

    Raises:
        ValueError: nothing to train on (no example passes ``min_reward``; for "dpo", no
            preference pair), or ``out_dir`` is not empty.
    """
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"out_dir {out} is not empty")
    dev = resolve_device(device)
    tokenizer = load_tokenizer(base_model_dir)
    with _reproducible(hyper.seed, dev):
        model = prepare_trainable_model(base_model_dir, parent_adapter_dir, hyper, dev)
        plan = _plan(model, tokenizer, examples, hyper, dev)
        losses, seconds = _optimise(model, plan, hyper, dev, on_step)
    out.mkdir(parents=True, exist_ok=True)
    _save_adapter(model, out, base_model_dir)
    return TrainResult(
        adapter_dir=out, steps=len(plan.batches), tokens_seen=plan.tokens,
        tokens_per_s=plan.tokens / seconds if seconds > 0 else 0.0, train_seconds=seconds,
        examples_used=plan.examples_used, examples_dropped=len(examples) - plan.examples_used,
        device=str(dev), losses=tuple(losses), objective=hyper.objective,
        pairs_used=plan.pairs_used, **_loss_summary(losses),
    )


@dataclass(frozen=True)
class _Plan:
    name: str
    batches: list[Any]  # one CPU-side batch per step
    loss: Callable[[Any, Any], torch.Tensor]  # (model, batch) -> loss on the device
    tokens: int
    examples_used: int
    pairs_used: int = 0


def _plan(
    model: Any, tokenizer: Any, examples: Sequence[TrainingExample], hyper: HyperParams,
    device: torch.device,
) -> _Plan:
    chosen = select_answers(examples, hyper.selection, hyper.keep_per_prompt, hyper.min_reward)
    dtype = base_dtype(device, hyper.precision)
    if hyper.objective == "dpo":
        steps = hyper.steps_for(len(preference_pairs(chosen, hyper.min_reward)))
        batches, pairs, used = dpo_batches(
            model, tokenizer, chosen, hyper.min_reward, hyper.max_len, hyper.batch_size,
            steps, hyper.seed, device,
        )
        return _Plan("dpo", batches, lambda m, b: dpo_step_loss(m, b, device, hyper.dpo_beta),
                     sum(b.tokens for b in batches), used, pairs)
    selected = select_weighted(chosen, hyper.min_reward)
    if not selected:
        raise ValueError(f"no example has reward >= min_reward ({hyper.min_reward})")
    data = encode_examples(
        tokenizer, [ex for ex, _ in selected], hyper.max_len, [w for _, w in selected]
    )
    steps = hyper.steps_for(len(data))
    sft = [data.select(i) for i in batch_schedule(len(data), hyper.batch_size, steps, hyper.seed)]
    return _Plan("reward_weighted_sft", sft, lambda m, b: _sft_loss(m, b, device, dtype),
                 sum(int(b.attention_mask.sum()) for b in sft), len(selected))


def _sft_loss(model: Any, cpu_batch: EncodedExamples, device: torch.device,
              dtype: torch.dtype) -> torch.Tensor:
    batch = cpu_batch.to(device)
    with autocast_for(device, dtype):
        return sliced_weighted_nll(model, batch.input_ids, batch.attention_mask, batch.labels,
                                   batch.weights)


def _optimise(
    model: Any, plan: _Plan, hyper: HyperParams, device: torch.device, on_step: OnStep | None
) -> tuple[list[float], float]:
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=hyper.learning_rate, weight_decay=hyper.weight_decay,
        foreach=device.type == "cuda",
    )
    step_losses: list[torch.Tensor] = []
    model.train()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    for step, batch in enumerate(plan.batches, start=1):
        loss = plan.loss(model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step_losses.append(loss.detach())
        if on_step is not None:  # .item() waits for the GPU, so only when someone listens
            on_step(step, len(plan.batches), float(loss.item()))
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    model.eval()
    losses = torch.stack(step_losses).float().tolist() if step_losses else []
    return losses, seconds
