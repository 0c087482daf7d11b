"""Simulated users, a real model: does a successor trained on chat traffic alone serve users
it never trained on better? The acceptance test of training from traffic.

    .venv/bin/python bench/traffic.py --model smollm2-135m --out /tmp/traffic \\
        [--generations 2] [--eval-users 60] [--train-users 48] [--seed 0]
    .venv/bin/python bench/traffic.py --model tiny --out /tmp/traffic-tiny   # the plumbing

A fresh embedded world (SQLite), the contract ``bench/traffic_contract.toml`` published
(chat turns judged by the user's next move and by a judge model pinned by digest: the
base model itself, served by the server's own engine), and `hcp serve` as a process.
Then, per generation: the held-out users (the same ones every generation; their
questions are on the held-out side of the server's split rule, so the server never
trains on them) ask once each (greedy), then a fresh batch of training users talk,
react and leave (bench/traffic_users.py: corrections, regenerations, disputes, ratings;
their wants hidden). The server does the rest under the contract: sessions end by the
idle timeout, rewards are written (judge verdicts first), the trigger fires, a successor
trains from traffic alone (generation 1: rejection sampling, ``objective = "sft"`` with
``hyper.traffic``; generation 2: a new contract version asks for the preference objective,
DPO with the chosen answers' NLL, on corrections and regenerations), is gated on
held-out traffic plus the probe sets, and promoted or rejected with its record. At the
end: ``hcp audit all``.

The figures (``report.json`` under ``--out``): each generation's held-out success rate
(the users' own checkers, never seen by the server) with a 95% Wilson interval and the
paired change against the base with a bootstrap interval; the judge's agreement with the
checkers; each run's gate and probe sets. The machine is shared: figures carry the load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from traffic_chat import Talk, talk  # noqa: E402
from traffic_report import agreement, generations, markdown  # noqa: E402
from traffic_users import Behaviour, Population  # noqa: E402
from traffic_world import (  # noqa: E402
    CONTRACT_NAME,
    HCP,
    World,
    build,
    contract_text,
    copy_cache,
    next_run,
    publish,
    settle,
    start,
    stop,
)

RFT = ('{ traffic = true, objective = "sft", selection = "best_of_k", keep_per_prompt = 2, '
       'min_reward = 0.7, epochs = 3, learning_rate = 0.0005, max_len = 192 }')
DPO = ('{ traffic = true, objective = "dpo", dpo_beta = 0.1, dpo_nll_weight = 1.0, selection = "all", '
       'min_reward = 0.7, epochs = 3, learning_rate = 0.0005, max_len = 192 }')


def main() -> None:
    args = _args()
    root = Path(args.out).resolve()
    started, load = time.time(), os.getloadavg()
    # Every training user's first question is on the train side and eligible: the trigger
    # fires once a generation's users are in, not before (the rest counts for the next).
    min_new = args.train_users
    world = build(root, args.model, copy_cache(args.cache, root), args.idle, min_new, RFT, args.probes)
    start(world, root / "serve.log")
    import openai

    client = openai.OpenAI(base_url=f"{world.api}/v1", api_key=world.user_key, max_retries=3,
                           timeout=900)
    population, behaviour = Population(args.seed), Behaviour()
    held = population.users(args.eval_users, "held_out", "held")
    talks: list[Talk] = []
    runs: list[dict[str, Any]] = []
    try:
        for g in range(args.generations + 1):
            talks += [talk(client, u, "held_out", g, behaviour) for u in held]
            _say(f"generation {g}: held-out success {sum(t.passed for t in talks if t.generation == g)}"
                 f"/{len(held)}")
            if g == args.generations:
                break
            if g == 1:
                version = publish(world, contract_text(world.base, world.digest, args.idle, min_new,
                                                       DPO, args.probes), "preference pairs from traffic")
                _say(f"published {CONTRACT_NAME}@{version}: the preference objective")
            train = population.users(args.train_users, "train", f"train{g}")
            talks += [talk(client, u, "train", g, behaviour) for u in train]
            settle(world, {t.session for t in talks if t.generation == g}, args.timeout)
            for run in next_run(world, {r["run_id"] for r in runs}, args.timeout):
                runs.append({"generation": g, **_run(world, run)})
                _say(f"run {run.run_id[:8]}: {run.status} {runs[-1].get('status')} "
                     f"{runs[-1].get('reason')}")
        settle(world, {t.session for t in talks if t.generation == args.generations}, args.timeout)
    finally:
        stop(world)
    audit = subprocess.run([*HCP, "audit", "all"], env=world.env(), capture_output=True, text=True)
    report = _report(args, world, talks, runs, audit, started, load)
    (root / "report.json").write_text(json.dumps(report, indent=2))
    print(markdown(report))
    print(json.dumps({k: report[k] for k in ("judge", "runs", "audit")}, indent=2))


def _run(world: World, run: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"run_id": run.run_id, "run_status": run.status, "error": run.error,
                           "hyper": run.hyper}
    if run.adapter_id:
        adapter = world.container.registry.adapter(run.adapter_id)
        gate = adapter.metrics.get("gate", {})
        training = adapter.metrics.get("training", {})
        out |= {"adapter": f"{adapter.specialist}@{adapter.version}", "status": adapter.status,
                "reason": gate.get("reason"), "metric": gate.get("metric"),
                "comparison": gate.get("comparison"),
                "probes": _probes(gate.get("non_inferiority") or {}),
                "objective": training.get("objective"), "examples_used": training.get("examples_used"),
                "pairs_used": training.get("pairs_used"), "train_seconds": training.get("train_seconds")}
    return out


def _probes(record: dict[str, Any]) -> dict[str, Any]:
    """The probe sets' non-inferiority, without the answers."""
    sets = {name: {key: found.get(key) for key in ("n", "ok", "delta", "mean", "non_inferiority")}
            for name, found in (record.get("sets") or {}).items()}
    return {"ok": record.get("ok"), "rule": record.get("rule"), "note": record.get("note"), "sets": sets}


def _report(args: argparse.Namespace, world: World, talks: list[Talk], runs: list[dict[str, Any]],
            audit: subprocess.CompletedProcess[str], started: float,
            load: tuple[float, ...]) -> dict[str, Any]:
    rows = [t.to_json() for t in talks]
    return {"date": time.strftime("%Y-%m-%d"), "command": " ".join(sys.argv), "model": args.model,
            "base_digest": world.digest, "seconds": round(time.time() - started),
            "load_before": list(load), "load_after": list(os.getloadavg()),
            "generations": generations(rows, args.generations), "judge": _judge(world, talks),
            "runs": runs, "audit": {"exit": audit.returncode, "tail": audit.stdout[-1500:]},
            "talks": rows}


def _judge(world: World, talks: list[Talk]) -> dict[str, Any]:
    """The judge's verdict on each first answer against the user's checker."""
    from evaluators.rewards import RewardQuery

    pairs: list[tuple[bool, float | None]] = []
    for t in talks:
        answer_id = t.completion_id.removeprefix("chatcmpl-")
        found = world.container.rewards.find(RewardQuery(stream_id=f"session-{t.session}", limit=20))
        judged = [r for r in found
                  if r.judgements and any(e.replace("-", "") == answer_id for e in r.event_ids)]
        verdict = judged[0].judgements[0] if judged else {}
        pairs.append((t.passed, None if verdict.get("error") else verdict.get("score")))
    return agreement(pairs)


def _say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m", help="tiny, or a packaged base model")
    parser.add_argument("--out", required=True)
    parser.add_argument("--generations", type=int, default=2)
    parser.add_argument("--eval-users", type=int, default=60)
    parser.add_argument("--train-users", type=int, default=48)
    parser.add_argument("--probes", type=int, default=16, help="tasks per probe set the gate runs")
    parser.add_argument("--idle", default="20s", help="the contract's idle timeout")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=5400.0)
    parser.add_argument("--cache", type=Path, default=None, help="a directory of wheels to fetch from")
    return parser.parse_args()


if __name__ == "__main__":
    main()
