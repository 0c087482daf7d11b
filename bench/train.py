"""Training throughput: ``train_successor`` against a bare torch + peft loop, and against
TRL's ``SFTTrainer``, the library a user would otherwise pick.

All three train the same LoRA (same base, rank, targets, optimiser, learning rate, batch
size, steps, maximum length, the same tokenized examples with the loss on the response
only) in the same process, rotating the order over several repeats; the figure is input
tokens (non-padding) per second of the optimisation loop (model loading, tokenizing and
saving excluded). The ratio is the median of per-repeat ratios. Goals: train_successor /
bare >= 0.95, train_successor / TRL >= 1.2.
TRL runs with its defaults otherwise (it also logs token accuracy and entropy each step:
that is what its users get); ``--no-trl`` skips it.

    .venv/bin/python bench/train.py                      # tiny local model, CPU
    .venv/bin/python bench/train.py --model-dir /models/Qwen2.5-0.5B --batch-size 8
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from transformers import TrainerCallback

from trainer.ml.data import TrainingExample, encode_examples, encode_pair, select_weighted
from trainer.ml.load import load_base_model, load_tokenizer, resolve_device
from trainer.ml.lora import HyperParams, train_successor
from trainer.ml.objective import batch_schedule
from trainer.ml.tiny_model import build_tiny_base_model

WORDS = ["the", "a", "model", "tool", "call", "json", "user", "agent", "code", "file", "test",
         "reward", "plan", "step", "answer"]


def synthetic_examples(n: int, seed: int, words: int) -> list[TrainingExample]:
    rng = random.Random(seed)
    return [
        TrainingExample(
            prompt=" ".join(rng.choices(WORDS, k=words // 2)) + "?",
            response=" ".join(rng.choices(WORDS, k=words)),
            reward=rng.uniform(0.5, 1.0),
            weight=1.0,
            subject_id=f"s{i:05d}",
        )
        for i in range(n)
    ]


def bare_loop(
    model_dir: Path, examples: list[TrainingExample], hyper: HyperParams, device: torch.device
) -> float:
    """What one would write by hand: peft model, AdamW, HF's own loss. Returns tokens/s."""
    tokenizer = load_tokenizer(model_dir)
    selected = select_weighted(examples, hyper.min_reward)
    data = encode_examples(tokenizer, [ex for ex, _ in selected], hyper.max_len)
    batches = [data.select(i) for i in batch_schedule(len(data), hyper.batch_size,
                                                      hyper.steps, hyper.seed)]
    torch.manual_seed(hyper.seed)
    model = get_peft_model(load_base_model(model_dir, device), LoraConfig(
        r=hyper.rank, lora_alpha=hyper.alpha, target_modules=list(hyper.target_modules),
        lora_dropout=0.0, task_type="CAUSAL_LM",
    ))
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=hyper.learning_rate,
        foreach=device.type == "cuda",
    )
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=device.type == "cuda")
    tokens = sum(int(b.attention_mask.sum()) for b in batches)
    model.train()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    started = time.perf_counter()
    for cpu_batch in batches:
        b = cpu_batch.to(device)
        with autocast:
            loss = model(input_ids=b.input_ids, attention_mask=b.attention_mask,
                         labels=b.labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return tokens / (time.perf_counter() - started)


def trl_loop(
    model_dir: Path, examples: list[TrainingExample], hyper: HyperParams, device: torch.device,
    out_dir: Path,
) -> float:
    """TRL's SFTTrainer on the same encoded examples (pre-tokenized, completion-only loss)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    tokenizer = load_tokenizer(model_dir)
    selected = select_weighted(examples, hyper.min_reward)
    rows = [encode_pair(tokenizer, ex.prompt, ex.response, hyper.max_len) for ex, _ in selected]
    dataset = Dataset.from_dict({
        "input_ids": [ids for ids, _ in rows],
        "completion_mask": [[0] * start + [1] * (len(ids) - start) for ids, start in rows],
    })
    config = SFTConfig(
        output_dir=str(out_dir), max_steps=hyper.steps, per_device_train_batch_size=hyper.batch_size,
        learning_rate=hyper.learning_rate, lr_scheduler_type="constant", warmup_steps=0,
        weight_decay=hyper.weight_decay, optim="adamw_torch", seed=hyper.seed,
        max_length=hyper.max_len, packing=False, completion_only_loss=True,
        gradient_checkpointing=False, bf16=device.type == "cuda", use_cpu=device.type == "cpu",
        logging_strategy="no", save_strategy="no", report_to=[], disable_tqdm=True,
        dataloader_num_workers=0, include_num_input_tokens_seen="non_padding",
    )
    torch.manual_seed(hyper.seed)
    clock = _Clock(device)
    trainer = SFTTrainer(
        model=load_base_model(model_dir, device), args=config, train_dataset=dataset,
        processing_class=tokenizer, callbacks=[clock], peft_config=LoraConfig(
            r=hyper.rank, lora_alpha=hyper.alpha, target_modules=list(hyper.target_modules),
            lora_dropout=0.0, task_type="CAUSAL_LM"),
    )
    trainer.train()
    return trainer.state.num_input_tokens_seen / clock.seconds


class _Clock(TrainerCallback):
    """Times train begin -> train end: the optimiser steps and TRL's data loading."""

    def __init__(self, device: torch.device) -> None:
        self.device, self.seconds, self._started = device, 0.0, 0.0

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def on_train_begin(self, *args: object, **kwargs: object) -> None:
        self._sync()
        self._started = time.perf_counter()

    def on_train_end(self, *args: object, **kwargs: object) -> None:
        self._sync()
        self.seconds = time.perf_counter() - self._started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model-dir", type=Path, help="a local HF causal LM (default: tiny model)")
    p.add_argument("--device", default=None, help="cpu / cuda (default: cuda if available)")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--max-len", type=int, default=128)
    p.add_argument("--examples", type=int, default=64)
    p.add_argument("--words", type=int, default=24, help="words per response")
    p.add_argument("--rank", type=int, default=8)
    p.add_argument("--target-modules", default="q_proj,k_proj,v_proj,o_proj")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-trl", action="store_true", help="skip the TRL SFTTrainer peer")
    args = p.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    hyper = HyperParams(
        rank=args.rank, alpha=2 * args.rank, target_modules=tuple(args.target_modules.split(",")),
        steps=args.steps, batch_size=args.batch_size, max_len=args.max_len, learning_rate=1e-4,
    )
    examples = synthetic_examples(args.examples, seed=0, words=args.words)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = args.model_dir or build_tiny_base_model(Path(tmp) / "tiny")
        bare_loop(model_dir, examples, HyperParams(**{**hyper.__dict__, "steps": 2}), device)
        runs: dict[str, list[float]] = {"train_successor": [], "bare loop": []}
        if not args.no_trl:
            runs["TRL SFTTrainer"] = []
        kinds = list(runs)
        for r in range(args.repeats):
            # Rotate which goes first so none always gets the warmer caches.
            for kind in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:
                if kind == "bare loop":
                    runs[kind].append(bare_loop(model_dir, examples, hyper, device))
                elif kind == "TRL SFTTrainer":
                    runs[kind].append(trl_loop(model_dir, examples, hyper, device,
                                               Path(tmp) / f"trl-{r}"))
                else:
                    out = Path(tmp) / f"adapter-{r}"
                    runs[kind].append(train_successor(model_dir, None, examples, hyper, out,
                                                      device=device).tokens_per_s)
    print(f"model={args.model_dir or 'tiny (built locally)'} device={device} "
          f"threads={torch.get_num_threads()} steps={args.steps} batch={args.batch_size} "
          f"max_len={args.max_len} rank={args.rank} repeats={args.repeats}")
    for name, values in runs.items():
        print(f"{name:<16} tokens/s: median {statistics.median(values):>10,.0f}"
              f"   (runs: {', '.join(f'{x:,.0f}' for x in values)})")
    ours = runs["train_successor"]
    for peer, goal in (("bare loop", ">= 0.95"), ("TRL SFTTrainer", ">= 1.2")):
        if peer in runs:
            # Each repeat runs every loop once, back to back: a ratio within a repeat
            # compares runs under the same load, and the median of them is the figure.
            ratios = [a / b for a, b in zip(ours, runs[peer], strict=True)]
            print(f"vs {peer:<15} ratio {statistics.median(ratios):.3f} (median of per-repeat "
                  f"ratios: {', '.join(f'{x:.3f}' for x in ratios)}; goal {goal})")

if __name__ == "__main__":
    main()
