"""The embedded engine on a CUDA GPU in bf16, in one call (scripts/gpu_check.sh runs it):

1. the gateway: `hcp serve` with HCP_SERVING_DEVICE=cuda answers chat requests for three
   adapters (by alias and by artifact digest);
2. a gate: `hcp demo --model tiny --device cuda` (the harness, training, the tasks gate
   and its probe sets on the GPU) finishes with an intact hash chain;
3. greedy answers on the GPU (bf16) against the CPU engine's (fp32) on the same prompts
   and adapters: the share of prompts whose first FIRST_TOKENS tokens agree (bf16 rounds
   otherwise than fp32, so a near tie may flip: the share must reach MIN_AGREEMENT);
4. tokens/s on the GPU of one adapter's batch, a 4-adapter mixed batch (the engine's
   online batch) and bare transformers ``generate`` with the adapter, the same prompts.

Needs a CUDA GPU and this project installed with its train extra; no network, no vLLM:
the model is the tiny local Llama unless --model-dir names a local Hugging Face
directory. Prints PASS/FAIL lines and the figures; exit 0 only if every check passes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
FIRST_TOKENS, MIN_AGREEMENT = 4, 0.75
DEVICE = "cuda"  # --device cpu: the same checks on the CPU, to try the script without a GPU
PROMPTS = [f"Question {i}: name one thing about the number {i}." for i in range(32)]
failures: list[str] = []


def check(ok: bool, what: str) -> None:
    print(f"{'PASS' if ok else 'FAIL'}: {what}", flush=True)
    if not ok:
        failures.append(what)


def world(work: Path, model_dir: Path | None) -> tuple[Any, str, list[Any]]:
    from access.keys import create_key
    from hcp import migrate
    from hcp.bootstrap import Container
    from hcp.settings import Settings
    from kernel.db import make_engine
    from tests.serving_world import CONTRACT, build_world, train_adapter
    from tests.unit.trainer_core.factories import seed_reward
    from tests.unit.trainer_core.fixtures import RecordingDispatcher

    url = f"sqlite:///{work / 'hcp.sqlite3'}"
    migrate.upgrade(url)
    c = Container(settings=Settings(database_url=url, data_dir=work / "data",
                                    models_dir=work / "models", serving_contract=CONTRACT),
                  engine=make_engine(url), dispatch_to=RecordingDispatcher())
    if model_dir is None:
        build_world(c, work / "models", hidden_size=256, num_layers=4, num_heads=4)
    else:
        build_world(c, work / "models", base_dir=model_dir)
    ref = (CONTRACT, 1, c.contracts.get(CONTRACT, 1).content_hash)
    for name in ("chat", "coding"):
        seed_reward(c.engine, c.store, name, "seed", "seed", 1.0, contract=ref)
    adapters = [train_adapter(c, name, seed, f"gpu {seed}")[0]
                for seed, name in enumerate(["chat", "coding", "chat", "coding"])]
    c.aliases.move("chat", "production", adapters[0].adapter_id, "gpu-check", "start")
    c.aliases.move("coding", "production", adapters[1].adapter_id, "gpu-check", "start")
    return c, create_key(c.engine, ["chat:write"], "gpu-check"), adapters


def gateway(c: Any, key: str, work: Path, adapters: list[Any]) -> None:
    import httpx

    from tests.ports import free_port

    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": str(c.settings.database_url), "HCP_DATA_DIR": str(work / "data"),
           "HCP_MODELS_DIR": str(work / "models"), "HCP_SERVING_CONTRACT": "serve",
           "HCP_CONSOLE_SECRET": "gpu", "HCP_SERVING_DEVICE": DEVICE,
           "HCP_SERVING_PRECISION": "bf16"}
    log = (work / "serve.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port),
                             "--no-access-log", "--no-run-workers"], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        ready = False
        while time.monotonic() < deadline and not ready:
            with contextlib.suppress(httpx.TransportError):
                ready = httpx.get(f"{base}/healthz", timeout=2).status_code == 200
            time.sleep(0.5)
        check(ready, f"hcp serve on {DEVICE} warmed its engine and is ready")
        auth = {"Authorization": f"Bearer {key}"}
        served = {}
        for model in ("chat", "coding", f"sha256:{adapters[2].artifact_sha256}"):
            answer = httpx.post(f"{base}/v1/chat/completions", headers=auth, timeout=120, json={
                "model": model, "max_tokens": 16, "temperature": 0,
                "messages": [{"role": "user", "content": "hello there"}]})
            served[model] = (answer.status_code, answer.headers.get("x-hcp-adapter-digest"))
        check(all(code == 200 for code, _ in served.values()),
              f"the gateway answers three adapters on {DEVICE} (by alias and by digest): {served}")
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()


def demo(work: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATA_DIR": str(work / "demo")}
    run = subprocess.run([sys.executable, "-m", "cli.main", "demo", "--model", "tiny",
                          "--device", DEVICE, "--generations", "1", "--train-tasks", "4",
                          "--held-out", "8", "--eval-tasks", "4", "--k", "2"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=360)
    check(run.returncode == 0 and "hash chain intact" in run.stdout,
          f"a gate on {DEVICE}: hcp demo --model tiny --device {DEVICE} (harness, training, the "
          "tasks gate and its probes) finishes" + ("" if run.returncode == 0 else
                                              f"\n{(run.stdout + run.stderr)[-2000:]}"))


def targets(c: Any, adapters: list[Any | None], device: str, precision: str) -> list[Any]:
    """Each adapter (None: the bare base) on the registered base, as the engine names it."""
    from inference.types import Adapter, BaseModel, Target

    entry = c.registry.base_model("tiny")
    base = BaseModel(entry.name, entry.path, entry.weights_sha256)
    return [Target(base, Adapter(a.artifact_sha256) if a else None, precision, device)
            for a in adapters]


def agreement(c: Any, adapters: list[Any]) -> None:
    """Greedy first tokens, GPU bf16 against CPU fp32, per adapter and the base."""
    from inference.embedded.engine import EmbeddedEngine
    from inference.types import Prompt, SampleJob

    prompts = tuple(Prompt("", ({"role": "user", "content": p},)) for p in PROMPTS)
    answers = {}
    for side, device, precision in (("cpu", "cpu", "fp32"), ("gpu", DEVICE, "bf16")):
        engine = EmbeddedEngine(c.artifacts.open_dir, device)
        answers[side] = [[s.text for s in engine.sample(SampleJob(t, prompts, FIRST_TOKENS))]
                         for t in targets(c, [adapters[0], adapters[2], None], device, precision)]
    same = [a == b for cpu, gpu in zip(answers["cpu"], answers["gpu"], strict=True)
            for a, b in zip(cpu, gpu, strict=True)]
    share = sum(same) / len(same)
    check(share >= MIN_AGREEMENT, f"greedy answers, first {FIRST_TOKENS} tokens: {DEVICE} bf16 agrees "
          f"with CPU fp32 on {share:.0%} of {len(same)} (2 adapters and the base; at least "
          f"{MIN_AGREEMENT:.0%})")


def online_tokens_per_s(engine: Any, target_of: Any, max_tokens: int) -> float:
    from inference.types import Request

    started = time.perf_counter()
    futures = [engine.submit(Request(target_of(i), ({"role": "user", "content": p},), max_tokens))
               for i, p in enumerate(PROMPTS)]
    tokens = sum(f.result(timeout=300).completion_tokens for f in futures)
    return tokens / (time.perf_counter() - started)


def bare_tokens_per_s(model: Any, tok: Any, max_tokens: int) -> float:
    import torch

    from trainer.ml.prompts import prompt_ids

    rendered = [prompt_ids(tok, "", [{"role": "user", "content": p}]) for p in PROMPTS]
    width = max(map(len, rendered))
    ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in rendered], device=DEVICE)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in rendered], device=DEVICE)
    started = time.perf_counter()
    with torch.inference_mode(), torch.autocast(torch.device(DEVICE).type, dtype=torch.bfloat16):
        out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_tokens,
                             do_sample=False, pad_token_id=tok.pad_token_id)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    tokens = sum(next((i + 1 for i, t in enumerate(row) if t == tok.eos_token_id), len(row))
                 for row in out[:, width:].tolist())
    return tokens / (time.perf_counter() - started)


def throughput(c: Any, adapters: list[Any], repeats: int, max_tokens: int) -> None:
    import torch
    from peft import PeftModel

    from inference.embedded.engine import EmbeddedEngine
    from trainer.ml.load import load_base_model, load_tokenizer

    engine = EmbeddedEngine(c.artifacts.open_dir, DEVICE, max_rows=len(PROMPTS))
    mixed = targets(c, list(adapters), DEVICE, "bf16")
    one = mixed[0]
    entry = c.registry.base_model("tiny")
    tok = load_tokenizer(entry.path)
    bare = PeftModel.from_pretrained(load_base_model(entry.path, torch.device(DEVICE), "bf16"),
                                     str(c.artifacts.open_dir(adapters[0].artifact_sha256))).eval()
    figures: dict[str, list[float]] = {"one adapter": [], "4-adapter mixed": [], "bare generate": []}
    online_tokens_per_s(engine, lambda i: mixed[i % 4], max_tokens)  # loads and warms
    bare_tokens_per_s(bare, tok, max_tokens)
    for _ in range(repeats):
        figures["one adapter"].append(online_tokens_per_s(engine, lambda i: one, max_tokens))
        figures["4-adapter mixed"].append(online_tokens_per_s(engine, lambda i: mixed[i % 4],
                                                              max_tokens))
        figures["bare generate"].append(bare_tokens_per_s(bare, tok, max_tokens))
    med = {k: statistics.median(v) for k, v in figures.items()}
    card = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
    print(f"tokens/s on {card} (bf16, {len(PROMPTS)} prompts, {max_tokens} tokens, median of "
          f"{repeats}): " + ", ".join(f"{k} {v:,.0f}" for k, v in med.items()), flush=True)
    print(f"  medians of per-repeat ratios: 4-adapter mixed / one adapter "
          f"{_ratio(figures['4-adapter mixed'], figures['one adapter']):.2f}; one adapter / bare "
          f"generate {_ratio(figures['one adapter'], figures['bare generate']):.2f}")
    check(all(v > 0 for v in med.values()), f"throughput measured on {DEVICE}")


def _ratio(ours: list[float], theirs: list[float]) -> float:
    return statistics.median(a / b for a, b in zip(ours, theirs, strict=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", type=Path, help="a local Hugging Face model (default: tiny)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--work", type=Path, help="where the world is built (default: a temp dir)")
    parser.add_argument("--device", default="cuda", help="cpu: try the script without a GPU")
    args = parser.parse_args()
    import torch

    global DEVICE
    DEVICE = args.device
    if DEVICE == "cuda" and not torch.cuda.is_available():
        print("FAIL: no CUDA device (torch.cuda.is_available() is False)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        started = time.perf_counter()
        c, key, adapters = world(work, args.model_dir)
        gateway(c, key, work, adapters)
        demo(work)
        agreement(c, adapters)
        throughput(c, adapters, args.repeats, args.max_tokens)
        print(f"{time.perf_counter() - started:.0f} s in all; "
              f"{'all checks passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
