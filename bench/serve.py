"""Serving the mixture: chat completions through `hcp serve` against bare transformers, in
the same run, on the same prompts.

- throughput: completion tokens per second of ``--clients`` OpenAI clients sending the
  prompts to POST /v1/chat/completions (a real `hcp serve` process on an embedded
  database, every exchange recorded) against ``model.generate`` of the same base on the
  same rendered prompts, greedy, in batches of ``--clients`` (what the gateway's batcher
  can at best group), the same token budget. Goal >= 0.9 (median of per-repeat ratios).
- recording: what recording one exchange costs the request, the ``record`` call (the
  ingest path, one transaction) timed in the server's own terms: p50 and p99 over the
  throughput run's exchanges, from the server's timing header.
- mixed batch: one batch of 4 specialists' adapters (``adapter_names`` per row) against
  one batch of the same size on one adapter, tokens/s in process. Goal >= 0.9.
- alias move: from ``alias.moved`` committed to the first answer whose
  X-HCP-Adapter-Digest is the new adapter's, with a client asking in a loop. Goal < 1 s.

    python bench/serve.py                 # a small local Llama (hidden 256, 4 layers)
    python bench/serve.py --hidden 64 --layers 2 --repeats 1   # plumbing only
    python bench/serve.py --model-dir ~/.local/share/hcp/models/smollm2-135m   # the real model (bf16)

The load average is printed with the figures: on a shared machine they move with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PROMPTS = [f"Tell me about item {i} and why it matters." for i in range(64)]


def world(root: Path, hidden: int, layers: int,
          model_dir: Path | None = None) -> tuple[Any, str, list[Any]]:
    """An embedded database with the serving world (the tiny base, or ``model_dir`` under
    the tiny's name), four specialists' adapters."""
    from access.keys import create_key
    from hcp import migrate
    from hcp.bootstrap import Container
    from hcp.settings import Settings
    from kernel.db import make_engine
    from tests.serving_world import CONTRACT, build_world, train_adapter
    from tests.unit.trainer_core.fixtures import RecordingDispatcher

    url = f"sqlite:///{root / 'hcp.sqlite3'}"
    migrate.upgrade(url)
    settings = Settings(database_url=url, data_dir=root, models_dir=root / "models",
                        serving_contract=CONTRACT)
    c = Container(settings=settings, engine=make_engine(url), dispatch_to=RecordingDispatcher())
    if model_dir is None:
        build_world(c, root / "models", hidden_size=hidden, num_layers=layers, num_heads=4)
    else:
        build_world(c, root / "models", base_dir=model_dir)
    key = create_key(c.engine, ["chat:write"], "bench")
    from tests.unit.trainer_core.factories import seed_reward

    ref = (CONTRACT, 1, c.contracts.get(CONTRACT, 1).content_hash)
    for name in ("chat", "coding"):  # something for the runs that register the adapters
        seed_reward(c.engine, c.store, name, "seed", "seed", 1.0, contract=ref)
    adapters = [train_adapter(c, name, seed, f"bench {seed}")[0]
                for seed, name in enumerate(["chat", "coding", "chat", "coding"])]
    c.aliases.move("chat", "production", adapters[0].adapter_id, "bench", "start")
    c.aliases.move("coding", "production", adapters[1].adapter_id, "bench", "start")
    return c, key, adapters


def serve(root: Path, port: int, window_ms: float, precision: str) -> subprocess.Popen[bytes]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATABASE_URL": f"sqlite:///{root / 'hcp.sqlite3'}", "HCP_DATA_DIR": str(root),
           "HCP_MODELS_DIR": str(root / "models"), "HCP_SERVING_CONTRACT": "serve",
           "HCP_CONSOLE_SECRET": "bench", "HCP_SERVING_BATCH_WINDOW_MS": str(window_ms),
           "HCP_SERVING_PRECISION": precision}
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", "serve", "--port", str(port),
                             "--no-access-log", "--no-run-workers"], cwd=ROOT, env=env,
                            stdout=(root / "serve.log").open("wb"), stderr=subprocess.STDOUT)
    import httpx

    for _ in range(300):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code < 500:
                return proc
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError((root / "serve.log").read_text()[-2000:])


def gateway_tokens_per_s(client: Any, clients: int, max_tokens: int) -> tuple[float, list[float]]:
    tokens, record_ms, lock = [0], [], threading.Lock()
    chunks = [PROMPTS[i::clients] for i in range(clients)]

    def run(prompts: list[str]) -> None:
        for p in prompts:
            raw = client.chat.completions.with_raw_response.create(
                model="chat", messages=[{"role": "user", "content": p}], max_tokens=max_tokens,
                temperature=0)
            with lock:
                tokens[0] += raw.parse().usage.completion_tokens
                record_ms.append(float(raw.headers.get("x-hcp-record-ms", "nan")))

    started = time.perf_counter()
    threads = [threading.Thread(target=run, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return tokens[0] / (time.perf_counter() - started), record_ms


def bare_tokens_per_s(c: Any, adapter_dir: Path, clients: int, max_tokens: int,
                      precision: str) -> float:
    """transformers generate on the same rendered prompts (the gateway's messages), the
    base in the same precision (bf16 under autocast, as the engine runs it)."""
    import torch
    from peft import PeftModel

    from contract.document import parse_contract
    from serving.openai_shapes import ChatRequest
    from serving.prompting import chat_messages, system_text
    from tests.serving_world import DOCUMENT
    from trainer.ml.load import autocast_for, base_dtype, load_base_model, load_tokenizer
    from trainer.ml.prompts import prompt_ids

    base, cpu = c.registry.base_model("tiny").path, torch.device("cpu")
    tok = load_tokenizer(base)
    model = PeftModel.from_pretrained(load_base_model(base, cpu, precision), str(adapter_dir)).eval()
    autocast = autocast_for(cpu, base_dtype(cpu, precision))
    harness = parse_contract(DOCUMENT).harness
    system = system_text(harness, "chat", [])
    rendered = [prompt_ids(tok, "", chat_messages(system, ChatRequest.model_validate(
        {"messages": [{"role": "user", "content": p}]}).messages)) for p in PROMPTS]
    tokens, started = 0, time.perf_counter()
    with torch.inference_mode(), autocast:
        for b in range(0, len(rendered), clients):
            batch = rendered[b:b + clients]
            width = max(map(len, batch))
            ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in batch])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_tokens,
                                 do_sample=False, pad_token_id=tok.pad_token_id)
            new = out[:, width:]
            for row in new.tolist():  # up to and including the end of sequence, as served
                tokens += next((i + 1 for i, t in enumerate(row) if t == tok.eos_token_id), len(row))
    return tokens / (time.perf_counter() - started)


def adapter_pool(c: Any, adapters: list[Any], precision: str) -> Any:
    """The embedded engine's pool on the CPU with the four adapters loaded."""
    from inference.embedded.engine import EmbeddedEngine
    from inference.types import Adapter, BaseModel, Target

    entry = c.registry.base_model("tiny")
    engine = EmbeddedEngine(c.artifacts.open_dir, "cpu", 8)
    pool = engine.pool(Target(BaseModel(entry.name, entry.path, entry.weights_sha256), None, precision))
    for a in adapters:
        pool.ensure(Adapter(a.artifact_sha256))
    return pool


def mixed_vs_single(pool: Any, adapters: list[Any], rows: int, max_tokens: int) -> float:
    """One repeat: each batch decoded once to warm up, then timed, in the same order."""
    from inference.embedded.online import Decoding, GenJob
    from inference.types import Adapter, Request, Target
    from trainer.ml.prompts import prompt_ids

    digests = [a.artifact_sha256 for a in adapters]
    messages = [({"role": "user", "content": p},) for p in PROMPTS[:rows]]

    def rate(choice: list[str]) -> float:
        jobs = [GenJob(Request(Target(pool.base, Adapter(choice[i % len(choice)]), pool.precision),
                               m, max_tokens),
                       prompt=prompt_ids(pool.tokenizer, "", m)) for i, m in enumerate(messages)]
        started, decoding = time.perf_counter(), Decoding(pool, 0)
        decoding.join(jobs)
        while decoding.alive:
            decoding.step()
        results = [j.future.result() for j in jobs]
        return sum(r.completion_tokens for r in results) / (time.perf_counter() - started)

    rate(digests), rate(digests[:1])  # first calls allocate: not what is measured
    return rate(digests) / rate(digests[:1])


def alias_move_s(c: Any, client: Any, adapters: list[Any]) -> list[float]:
    """Seconds from a committed move to the first answer by the new adapter."""
    ask = {"model": "coding", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1}
    out = []
    for flip in range(6):
        target = adapters[3] if flip % 2 == 0 else adapters[1]
        c.aliases.move("coding", "production", target.adapter_id, "bench", f"flip {flip}")
        moved = time.perf_counter()
        while True:
            raw = client.chat.completions.with_raw_response.create(**ask)
            if raw.headers["x-hcp-adapter-digest"] == target.artifact_sha256:
                out.append(time.perf_counter() - moved)
                break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--window-ms", type=float, default=5.0, help="HCP_SERVING_BATCH_WINDOW_MS")
    parser.add_argument("--model-dir", type=Path, help="a Hugging Face model directory (default: "
                        "the tiny local Llama)")
    parser.add_argument("--precision", help="fp32 or bf16 (default: fp32 tiny, bf16 a model dir)")
    args = parser.parse_args()
    precision = args.precision or ("bf16" if args.model_dir else "fp32")
    print(f"load {_load()} at start; torch threads {_threads()}; precision {precision}")
    import openai

    from tests.ports import free_port

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        c, key, adapters = world(root, args.hidden, args.layers, args.model_dir)
        port = free_port()
        proc = serve(root, port, args.window_ms, precision)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=key, max_retries=0)
            client.chat.completions.create(model="chat", messages=[{"role": "user", "content": "warm"}])
            ratios, record_ms = [], []
            adapter_dir = c.artifacts.open_dir(adapters[0].artifact_sha256)
            for _ in range(args.repeats):
                ours, ms = gateway_tokens_per_s(client, args.clients, args.max_tokens)
                bare = bare_tokens_per_s(c, adapter_dir, args.clients, args.max_tokens, precision)
                ratios.append(ours / bare)
                record_ms += ms
                print(f"throughput: gateway {ours:.0f} tok/s, bare generate {bare:.0f} tok/s, "
                      f"ratio {ours / bare:.2f}")
            moves = alias_move_s(c, client, adapters)
        finally:
            proc.terminate()
            proc.wait(30)
        pool = adapter_pool(c, adapters, precision)
        mixed = [mixed_vs_single(pool, adapters, 16, args.max_tokens) for _ in range(args.repeats)]
    record_ms.sort()
    print(f"throughput ratio (median of {args.repeats}): {statistics.median(ratios):.2f} (goal >= 0.9)")
    print(f"recording per request: p50 {_pct(record_ms, 50):.2f} ms, p99 {_pct(record_ms, 99):.2f} ms "
          f"({len(record_ms)} exchanges)")
    print(f"mixed 4-adapter batch / single-adapter batch (16 rows): median "
          f"{statistics.median(mixed):.2f} of {[round(m, 2) for m in mixed]} (goal >= 0.9)")
    print(f"alias move to first answer by the new adapter: first load {moves[0]:.3f} s, then "
          f"median {statistics.median(moves[1:]):.3f} s, max {max(moves):.3f} s (goal < 1 s)")
    print(f"load {_load()} at the end")


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(len(values) * q / 100))] if values else float("nan")


if __name__ == "__main__":
    main()
