"""The loop's own throughput on the real model, each against what one would write by hand,
on the same prompts in the same run; and the demo's held-out reward per generation.

- generation: the engine's offline mode (``EmbeddedEngine.sample``: k answers per task, the
  prompt prefilled once, finished rows leave the batch, stop rules) against transformers'
  ``generate`` (``do_sample``, ``num_return_sequences=k``, left-padded batches), both with
  the same base in the same precision, the same task prompts, k, temperature and token
  budget. Figures: new tokens per second (end of sequence included) and answers per
  second (what a harness needs: ``generate`` keeps going until end of sequence, while
  the harness stops where the check stops reading).
- training: ``train_successor`` (the trainer) against a bare peft loop (get_peft_model,
  AdamW, the model's own loss, same precision and autocast), on the harness's sampled
  answers to the same prompts; input tokens (non-padding) per second of the optimisation
  loop. Goal for both: ours / bare >= 0.9, as the median of per-repeat ratios.
- the demo: held-out reward of the production adapter per generation, read from the
  report `hcp demo` wrote (``--report``, default docs/demo-report.json).

    python bench/loop.py --model-dir ~/.local/share/hcp/models/smollm2-135m
    python bench/loop.py            # the tiny local model: plumbing only
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from harness.tasks import Task
from harness.tasks.catalog import family, train_tasks
from inference.types import GenStats, SampleJob, prompt_of
from trainer.ml.data import TrainingExample, encode_examples
from trainer.ml.load import autocast_for, base_dtype, load_base_model, load_tokenizer, resolve_device
from trainer.ml.lora import HyperParams, train_successor
from trainer.ml.objective import batch_schedule
from trainer.ml.prompts import prompt_ids

REPORT = Path(__file__).parents[1] / "docs" / "demo-report.json"


def prompts_of(tok: Any, tasks: list[Task]) -> list[list[int]]:
    return [prompt_ids(tok, t.prompt, t.messages()) for t in tasks]


def ours_generate(engine: Any, target: Any, tasks: list[Task], k: int,
                  temperature: float) -> tuple[float, float, list[str]]:
    """The engine's offline mode, as the harness asks it (no memo: every answer generated)."""
    fam = family(tasks[0].specialist)
    stats = GenStats()
    job = SampleJob(target, tuple(prompt_of(t.prompt, t.messages()) for t in tasks),
                    fam.max_new_tokens, k, temperature, 1, fam.stop, 64)
    out = engine.sample(job, stats)
    return stats.new_tokens / stats.seconds, len(out) / stats.seconds, [s.text for s in out]


@torch.inference_mode()
def bare_generate(model: Any, tok: Any, tasks: list[Task], k: int, temperature: float,
                  device: torch.device, dtype: torch.dtype) -> tuple[float, float]:
    fam = family(tasks[0].specialist)
    prompts = prompts_of(tok, tasks)
    per_batch = max(1, 64 // k)
    new_tokens, answers = 0, 0
    started = time.perf_counter()
    for b in range(0, len(prompts), per_batch):
        chunk = prompts[b:b + per_batch]
        width = max(len(p) for p in chunk)
        ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in chunk], device=device)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in chunk], device=device)
        with autocast_for(device, dtype):
            out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True,
                                 temperature=temperature, top_k=0, top_p=1.0,
                                 num_return_sequences=k, max_new_tokens=fam.max_new_tokens,
                                 pad_token_id=tok.pad_token_id)
        for row in out[:, width:].tolist():
            new_tokens += row.index(tok.eos_token_id) + 1 if tok.eos_token_id in row else len(row)
        answers += len(out)
    seconds = time.perf_counter() - started
    return new_tokens / seconds, answers / seconds


def bare_train(model_dir: Path, examples: list[TrainingExample], hyper: HyperParams,
               device: torch.device) -> float:
    """What one would write by hand: peft model, AdamW, the model's own loss."""
    from peft import LoraConfig, get_peft_model

    tok = load_tokenizer(model_dir)
    data = encode_examples(tok, examples, hyper.max_len)
    steps = hyper.steps_for(len(data))
    batches = [data.select(i) for i in batch_schedule(len(data), hyper.batch_size, steps, hyper.seed)]
    torch.manual_seed(hyper.seed)
    model = get_peft_model(load_base_model(model_dir, device, hyper.precision), LoraConfig(
        r=hyper.rank, lora_alpha=hyper.alpha, target_modules=list(hyper.target_modules),
        lora_dropout=0.0, task_type="CAUSAL_LM"))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=hyper.learning_rate)
    dtype = base_dtype(device, hyper.precision)
    tokens = sum(int(b.attention_mask.sum()) for b in batches)
    model.train()
    started = time.perf_counter()
    for cpu_batch in batches:
        b = cpu_batch.to(device)
        with autocast_for(device, dtype):
            loss = model(input_ids=b.input_ids, attention_mask=b.attention_mask, labels=b.labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    return tokens / (time.perf_counter() - started)


def demo_rewards(report: Path) -> None:
    if not report.exists():
        print(f"demo: no report at {report} (run `hcp demo --out {report.parent}`)")
        return
    data = json.loads(report.read_text())
    for specialist, figures in data["specialists"].items():
        series = " -> ".join(f"{x:.3f}" for x in figures["production_by_generation"])
        versus = figures["last_vs_base"]
        print(f"demo {specialist}: held-out reward by generation (0 = base) {series}; last vs base "
              f"{versus['mean']:+.3f} [{versus['low']:+.3f}, {versus['high']:+.3f}] n={versus['n']}")


def report(what: str, ours: str, peer: str, mine: list[float], theirs: list[float], goal: str) -> None:
    ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
    print(f"{what}: {ours} {statistics.median(mine):,.2f}, {peer} {statistics.median(theirs):,.2f} "
          f"(medians); ratio {statistics.median(ratios):.2f}, the median of per-repeat ratios "
          f"{', '.join(f'{r:.2f}' for r in ratios)}{goal}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model-dir", type=Path, help="default: the tiny local model")
    p.add_argument("--device", default=None)
    p.add_argument("--precision", default=None, help="bf16/fp32 (default: bf16 real, fp32 tiny)")
    p.add_argument("--specialist", default="coding")
    p.add_argument("--tasks", type=int, default=16)
    p.add_argument("--k", type=int, default=4)
    p.add_argument("--temperature", type=float, default=0.5)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--report", type=Path, default=REPORT)
    p.add_argument("--only", choices=["generation", "training"], help="one half of the bench")
    args = p.parse_args()
    device = resolve_device(args.device)
    with tempfile.TemporaryDirectory() as tmp:
        if args.model_dir is None:
            from trainer.ml.tiny_model import build_tiny_base_model

            args.model_dir = build_tiny_base_model(Path(tmp) / "tiny")
        precision = args.precision or ("bf16" if args.model_dir.name != "tiny" else "fp32")
        dtype = base_dtype(device, precision)
        from inference.embedded.engine import EmbeddedEngine
        from inference.types import BaseModel, Target
        from trainer.ml.digest import weights_sha256

        tok = load_tokenizer(args.model_dir)
        tasks = train_tasks(args.specialist, args.tasks, lambda text: "train")
        gen: dict[str, list[tuple[float, float]]] = {"engine": [], "generate": []}
        texts: list[str] = []
        base = BaseModel("bench", str(args.model_dir), weights_sha256(args.model_dir))
        target = Target(base, None, precision, str(device))
        engine = EmbeddedEngine(lambda digest: Path(digest), str(device))
        model = engine.pool(target).model  # one base for both sides: the same weights
        for r in range(args.repeats if args.only != "training" else 0):  # alternate who goes first
            for kind in (["engine", "generate"] if r % 2 == 0 else ["generate", "engine"]):
                if kind == "engine":
                    tok_s, ans_s, texts = ours_generate(engine, target, tasks, args.k,
                                                        args.temperature)
                    gen[kind].append((tok_s, ans_s))
                else:
                    gen[kind].append(bare_generate(model, tok, tasks, args.k, args.temperature,
                                                   device, dtype))
        del model, engine
        examples = [TrainingExample(t.prompt, text, 1.0, 1.0, f"s{i}",
                                    tuple((m["role"], m["content"]) for m in t.messages()))
                    for i, (t, text) in enumerate(zip([t for t in tasks for _ in range(args.k)],
                                                       texts, strict=True))]
        hyper = HyperParams(epochs=1, batch_size=8, max_len=512, precision=precision, learning_rate=1e-3)
        train: dict[str, list[float]] = {"trainer": [], "bare peft": []}
        for r in range(args.repeats if args.only != "generation" and texts else 0):
            for kind in (["trainer", "bare peft"] if r % 2 == 0 else ["bare peft", "trainer"]):
                if kind == "trainer":
                    result = train_successor(args.model_dir, None, examples, hyper,
                                             Path(tmp) / f"a{r}", device=device)
                    train[kind].append(result.tokens_per_s)
                else:
                    train[kind].append(bare_train(args.model_dir, examples, hyper, device))
    print(f"model={args.model_dir} device={device} precision={precision} threads="
          f"{torch.get_num_threads()} tasks={args.tasks} k={args.k} repeats={args.repeats}")
    # Each repeat runs both sides back to back: a ratio within a repeat compares runs under
    # the same load, and the figure is the median of those ratios.
    if gen["engine"]:
        report("generation tokens/s", "engine offline", "transformers generate",
               [t for t, _ in gen["engine"]], [t for t, _ in gen["generate"]], " (goal > 1)")
        report("generation answers/s", "engine offline", "transformers generate",
               [a for _, a in gen["engine"]], [a for _, a in gen["generate"]], "")
    if train["trainer"]:
        report("training tokens/s", "trainer", "bare peft", train["trainer"], train["bare peft"],
               " (goal >= 0.9)")
    print(f"load {' '.join(Path('/proc/loadavg').read_text().split()[:3])} at the end")
    demo_rewards(args.report)


if __name__ == "__main__":
    main()
