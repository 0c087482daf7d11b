"""Training a LoRA successor adapter from its parent (or a fresh root) on a frozen base.

The objective is reward-weighted SFT, defined in ``trainer.ml.data`` (with a KL anchor to
the base when ``kl_weight`` > 0), or with ``objective="dpo"`` the preference loss of
``trainer.ml.preference``; ``trainer.ml.plan`` builds the steps. ``init = "base"`` starts
from a fresh LoRA whatever the parent; ``validation_fraction`` keeps some train prompts
out and keeps the best of several checkpoints on them (``trainer.ml.checkpoints``). The
result records the KL from the base on the answers it trained on. On CPU a run is
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

from trainer.ml.anchor import kl_from_base
from trainer.ml.checkpoints import Checkpoints, checkpoint_steps
from trainer.ml.data import TrainingExample, encode_examples, selected_examples
from trainer.ml.digest import weights_sha256
from trainer.ml.hyper import OBJECTIVES, HyperParams
from trainer.ml.load import base_dtype, load_base_model, load_tokenizer, resolve_device
from trainer.ml.plan import Plan, build_plan
from trainer.ml.portable import make_portable

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
    init: str = "parent"  # where training started: the parent's adapter, or a fresh one
    # mean per-token KL between the successor and the base on its training answers
    kl_from_base: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] = field(default_factory=dict)  # the validation split's choice
    # the base's dtype as trained: "bf16" asked on a CPU without bf16 products runs fp32
    dtype: str = ""

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
    corresponding fields of ``hyper`` apply to roots, and to every run with ``init =
    "base"``, which starts from a fresh LoRA whatever the parent. Call inside
    ``_reproducible``.
    """
    from peft import LoraConfig, PeftModel, get_peft_model

    dtype = base_dtype(device, hyper.precision)
    # Eager attention on a CPU in bf16: torch's CPU flash-attention backward in bf16 took a
    # third of each step; sdpa stays the serving choice.
    eager = device.type == "cpu" and dtype == torch.bfloat16
    base = load_base_model(base_dir, device, hyper.precision, "eager" if eager else None)
    if parent_adapter_dir is not None and hyper.init == "parent":
        model = PeftModel.from_pretrained(base, str(parent_adapter_dir), is_trainable=True)
    else:
        model = get_peft_model(base, LoraConfig(
            r=hyper.rank,
            lora_alpha=hyper.alpha,
            target_modules=list(hyper.target_modules),
            lora_dropout=0.0,  # dropout would need its own RNG stream and breaks reproducibility
            task_type="CAUSAL_LM",
        ))
    recompute_activations(base)
    return model


def recompute_activations(model: Any) -> None:
    """Each decoder layer's activations recomputed in the backward pass, not kept.

    A step on a batch of 8 answers of ~450 tokens otherwise keeps every layer's
    activations, the eager attention's ``[batch, heads, L, L]`` scores among them (twice:
    the fp32 softmax and its bf16 copy): SmolLM2-135M peaked at 9.4 GB resident in one
    CPU training run, 4.3 GB with this. The recomputation is the same operations on the
    same inputs, so losses, gradients and adapters keep their bits
    (``tests/unit/trainer/test_activation_memory.py``); the cost is one more forward pass
    of each layer per step. Only in training: without gradients (evaluation, the KL)
    the layers run as before."""
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is None:  # the library's older name
        enable = model.gradient_checkpointing_enable
    enable({"use_reentrant": False})


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
        plan = build_plan(model, tokenizer, examples, hyper, dev)
        checkpoints = (Checkpoints(plan.validate, checkpoint_steps(len(plan.batches), hyper.checkpoints))
                       if plan.validate is not None else None)
        losses, seconds = _optimise(model, plan, hyper, dev, on_step, checkpoints)
        if checkpoints is not None:
            checkpoints.restore(model)
        kl = _kl_from_base(model, tokenizer, examples, hyper, dev)
    out.mkdir(parents=True, exist_ok=True)
    _save_adapter(model, out, base_model_dir)
    return TrainResult(
        adapter_dir=out, steps=len(plan.batches), tokens_seen=plan.tokens,
        tokens_per_s=plan.tokens / seconds if seconds > 0 else 0.0, train_seconds=seconds,
        examples_used=plan.examples_used, examples_dropped=len(examples) - plan.examples_used,
        device=str(dev), dtype=str(base_dtype(dev, hyper.precision)).removeprefix("torch."),
        losses=tuple(losses), objective=hyper.objective,
        pairs_used=plan.pairs_used, init=hyper.init, kl_from_base=kl,
        checkpoint=checkpoints.summary(plan.validation_prompts) if checkpoints else {},
        **_loss_summary(losses),
    )


def _kl_from_base(model: Any, tokenizer: Any, examples: Sequence[TrainingExample],
                  hyper: HyperParams, device: torch.device) -> dict[str, Any]:
    """The KL between the trained model and the base on the answers the run selected (the
    new task's prompts, as RL's Razor measures it)."""
    chosen = selected_examples(examples, hyper.selection, hyper.keep_per_prompt,
                               hyper.min_reward, hyper.objective)
    if not chosen:
        return {}
    data = encode_examples(tokenizer, chosen, hyper.max_len)
    return kl_from_base(model, data, device, base_dtype(device, hyper.precision), hyper.batch_size)


def _optimise(
    model: Any, plan: Plan, hyper: HyperParams, device: torch.device, on_step: OnStep | None,
    checkpoints: Checkpoints | None = None,
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
        if checkpoints is not None:
            checkpoints.at(model, step)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - started
    model.eval()
    losses = torch.stack(step_losses).float().tolist() if step_losses else []
    return losses, seconds
