"""A world to serve chat from: the tiny base model, a published serving contract, the
specialists, and adapters registered the way training runs register them.

Adapters are real LoRA weights on the tiny base with random (non-zero) factors, so two
of them answer a greedy prompt differently; each is registered for a training run that
a trigger fired (``register_lora``), as the runner would.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from contract.policy import TriggerPolicy
from hcp.bootstrap import Container
from trainer.registry.model import CANDIDATE, AdapterVersion, NewAdapter

CONTRACT = "serve"
BASE = "tiny"
DOCUMENT = '''
[contract]
name = "serve"
description = "chat completions under test"
schema_version = 1

[harness]
base_model = "tiny"
tool_allowlist = ["weather", "python.run"]

[harness.generation]
max_tokens = 64

[harness.router]
strategy = "keywords"
default_specialist = "chat"

[harness.specialists.chat]
description = "conversation"
keywords = ["hello", "weather"]
tools = ["weather"]

[harness.specialists.coding]
description = "code"
keywords = ["python", "function"]
priority = 1
tools = ["python.run"]

[harness.prompts]
system = { text = "You are the test assistant." }
coding = { text = "Answer with Python code." }

[harness.skills]
brevity = { text = "Be brief." }

[evaluation]
subject = "episode"

[[evaluation.criteria]]
id = "liked"
weight = 1.0
expression = "feedback.count > 0 ? (double(feedback.rating) + 1.0) / 2.0 : 0.5"

[training]
eligible = "counts.answered_turns > 0"
'''


def build_world(c: Container, models_dir: Path, document: str = DOCUMENT,
                base_dir: Path | None = None, **sizes: int) -> None:
    """The tiny base (or ``base_dir``'s model, copied in), registered as ``tiny``; the
    contract ``document`` published (serving both slots), the specialists ``chat`` and
    ``coding``, and trigger policies that never fire by themselves (the tests fire runs, so
    a server's trigger loop must not)."""
    import shutil

    from trainer.ml.tiny_model import build_tiny_base_model

    if base_dir is None:
        path = build_tiny_base_model(models_dir / BASE, seed=0, **sizes)  # sizes: hidden_size ...
    else:
        path = Path(shutil.copytree(base_dir, models_dir / BASE))
    c.registry.register_base_model(BASE, path, "tester")
    known = {s.name for s in c.registry.specialists()}  # the migrations create the four
    for name in sorted({"chat", "coding"} - known):
        c.registry.create_specialist(name, name, "tester")
    draft = c.contracts.create_draft(CONTRACT, document, "tester")
    c.contracts.publish(CONTRACT, draft.version, "tester")
    for name in ("chat", "coding"):
        c.policies.configure(name, TriggerPolicy(enabled=False), "tester")


def lora_dir(base_dir: Path, out: Path, seed: int) -> Path:
    """A LoRA adapter on the base with random factors (so it changes the answers)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from trainer.ml.load import load_base_model

    torch.manual_seed(seed)
    model = load_base_model(base_dir, torch.device("cpu"))
    config = LoraConfig(r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                        init_lora_weights=False)
    get_peft_model(model, config).save_pretrained(str(out))
    return out


def register_lora(c: Container, run_id: str, seed: int, directory: Path | None = None) -> AdapterVersion:
    """Claim the run and register a random LoRA for it (or ``directory``), the way the
    runner ends a run."""
    claim = c.runs.claim(run_id, "tester", 60, 3)
    assert claim.outcome == "claimed", claim
    run = claim.run
    base = c.registry.base_model(run.base_model)
    with tempfile.TemporaryDirectory() as tmp:
        ref = c.artifacts.put_dir(directory or lora_dir(Path(base.path), Path(tmp) / "adapter", seed))
    manifest = c.manifests.rebuild(run.manifest_id)
    new = NewAdapter(
        specialist=run.specialist, parent_adapter_id=run.parent_adapter_id,
        base_model=run.base_model, training_run_id=run.run_id, manifest_id=run.manifest_id,
        hyper=run.hyper, metrics={"gate": {"promote": True, "reason": "test"}},
        artifact_sha256=ref.sha256, artifact_uri=ref.uri, status=CANDIDATE,
        contract_versions=tuple((v["name"], v["version"]) for v in manifest.contract_versions))
    return c.runner.registration.register(run, "tester", new, "test")


def train_adapter(c: Container, specialist: str, seed: int, reason: str,
                  directory: Path | None = None) -> tuple[AdapterVersion, Any]:
    """Fire a run for ``specialist`` on what has been rewarded (a forced re-run when the
    same data trained before) and register a random LoRA (or ``directory``) for it."""
    firing = c.triggers.fire_manual(specialist, "tester", reason, parent="root")
    if not firing.created:  # this data trained before: a forced re-run of the same work
        firing = c.triggers.fire_manual(specialist, "tester", reason, parent="root", force=True)
    return register_lora(c, firing.run_id, seed, directory), firing


def taught_lora_dir(base_dir: Path, out: Path, messages: list[dict[str, str]], answer: str,
                    steps: int = 400) -> Path:
    """A LoRA adapter taught to answer ``messages`` (as the gateway renders them) with
    exactly ``answer`` under greedy decoding: a tiny random model says nothing on purpose.
    Trained until every answer token is the argmax given the ones before (what greedy
    decoding then reproduces), and for a margin after."""
    import torch
    from peft import LoraConfig, get_peft_model

    from trainer.ml.load import load_base_model, load_tokenizer
    from trainer.ml.prompts import prompt_ids

    torch.manual_seed(0)
    tok = load_tokenizer(base_dir)
    model = get_peft_model(load_base_model(base_dir, torch.device("cpu")), LoraConfig(
        r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj",
                                              "gate_proj", "up_proj", "down_proj"]))
    prompt = prompt_ids(tok, "", messages)
    target = list(tok(answer, add_special_tokens=False)["input_ids"]) + [tok.eos_token_id]
    ids, want = torch.tensor([prompt + target]), torch.tensor(target)
    labels = torch.tensor([[-100] * len(prompt) + target])
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    exact = 0
    for _ in range(steps):
        result = model(input_ids=ids, labels=labels)
        result.loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        exact = exact + 1 if bool((result.logits[0, len(prompt) - 1:-1].argmax(-1) == want).all()) else 0
        if exact == 15:
            break
    model.save_pretrained(str(out))
    return out

