"""Response models mirror the domain's ``to_json`` forms: the same keys, and served exactly
as a plain dict was served before the models (pydantic's JSON of the dict)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from api.schemas import contracts as c
from api.schemas import events as e
from api.schemas import registry as r
from api.schemas import rewards as w
from api.schemas import training as t
from contract.diff import Change, ContractDiff
from contract.dryrun import DryRunReport, Mover
from contract.policy import RewardFloor, TriggerPolicy
from contract.versions import ContractVersion
from evaluators.dryrun import DryRun, Selection
from evaluators.model import RewardRecord
from evaluators.reevaluation import Job
from events.catalogue import catalogue_document
from events.model import EventMetadata, RecordedEvent
from inference.resolve import Resolved
from inference.types import BaseModel as ServedBase
from trainer.registry.model import AdapterVersion, AliasMove, BaseModelEntry, ContractRef, Specialist
from trainer.runs.model import TrainingRun
from trainer.triggers.firing import TriggerCheck
from trainer.triggers.model import Firing
from trainer.triggers.policy import resolve

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
UUID = uuid.UUID("12345678-1234-5678-1234-567812345678")
VERSION = ContractVersion("default", 2, 1, "draft", "[contract]", "h" * 64, "key:a", NOW, NOW,
                          None, None, None)
RUN = TrainingRun("run-1", "coding", "coding@1", "tiny", "m-1", "f-1", {"lr": 0.1}, {"margin": 0},
                  "running", 3, 10, 0.5, None, 1, "w-1", NOW, None, "key:a", NOW, NOW, NOW, None)
FIRING = Firing("f-1", "coding", "coding@1", 42, "manual", "because", "run-1", "key:a", NOW)
ADAPTER = AdapterVersion("coding@2", "coding", 2, "coding@1", "tiny", "run-1", "m-1", {"r": 8},
                         {"gate": {"promote": True}}, "a" * 64, "file:///a", "candidate", "promoted",
                         "worker", NOW, [ContractRef("default", 1, "h" * 64)])
POLICY = resolve(TriggerPolicy(min_new_rewards=5, reward_floor=RewardFloor(threshold=0.5, window=3),
                               dataset="since_parent"), contract="default")


def served(value: Any) -> Any:
    """How FastAPI served a route's plain dict before it had a response model."""
    return json.loads(TypeAdapter(Any).dump_json(value))


def served_by(model: type[BaseModel], value: Any, exclude_unset: bool = False) -> Any:
    return json.loads(model.model_validate(value).model_dump_json(by_alias=True,
                                                                  exclude_unset=exclude_unset))


def declared(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


CASES: list[tuple[type[BaseModel], Any]] = [
    (e.RecordedEventOut, RecordedEvent(UUID, "s", 1, 7, "turn.user", 1, {"text": "hi", "n": 1},
                                       EventMetadata(occurred_at=NOW, actor="u", causation_id=UUID),
                                       NOW, "d" * 64, "p" * 64, "h" * 64).to_json()),
    (c.ContractVersionSummaryOut, VERSION.summary()),
    (c.ContractVersionOut, {**VERSION.summary(), "document": VERSION.document}),
    (c.ContractDiffOut, ContractDiff("a", "b", (Change("evaluation", "criterion", "changed", "x.weight",
                                                       1, 2.5, "doubled"),)).to_json()),
    (c.DryRunOut, DryRun(VERSION, None, Selection(last=5), 1, False, DryRunReport(
        1, 1, 1, 0, 0, 0.5, None, 0, None, (1,) + (0,) * 9, (0,) * 10, 0, 0,
        (Mover("s1", 0.25, 0.5),), ({"subject_id": "s", "errors": []},))).to_json()),
    (c.ReevaluationJobOut, Job("j", "default", 1, 1, 10, 5, 3, 0, 0, "running", None, NOW, NOW).to_json()),
    (w.RewardOut, RewardRecord(UUID, "sub", "episode", "s", 1, 3, ("e1",), "default", 1, "h" * 64,
                               "ev@1", 0.75, {"brevity": 1, "tone": 0.5}, {"safe": True}, "train",
                               "coding", "coding@1", True, ({"item": "gate:x", "message": "m",
                                                             "kind": "runtime"},), NOW, 4,
                               judgements=({"judge": "q", "model": "sha256:" + "0" * 64,
                                            "prompt_hash": "p" * 64, "seed": 0, "verdict": "7",
                                            "verdict_event": None, "score": 0.6, "scores": None,
                                            "error": None},)).to_json()),
    (r.BaseModelOut, BaseModelEntry("tiny", "/m", "w" * 64, {"hidden": 8}, "key:a", NOW).to_json()),
    (r.SpecialistOut, Specialist("coding", "writes code", "key:a", NOW).to_json()),
    (r.AdapterOut, ADAPTER.to_json()),
    (r.AliasMoveOut, AliasMove(3, "coding", "production", "coding@2", None, "key:a", "ship", NOW).to_json()),
    (r.ResolvedOut, Resolved("coding", "production", "coding@2", 2, "a" * 64, "file:///a",
                             ServedBase("tiny", "/m", "w" * 64), NOW).to_json()),
    (t.TrainingRunOut, RUN.to_json()),
    (t.FiringOut, FIRING.to_json()),
    (t.TriggerCheckOut, TriggerCheck("coding", FIRING, "fired").to_json()),
    (t.TriggerCheckOut, TriggerCheck("coding", None, "nothing new").to_json()),
    (t.PolicyOut, {"specialist": "coding", **POLICY.to_json()}),
    (e.CatalogueEntryOut, catalogue_document()[0]),
]


@pytest.mark.parametrize(("model", "value"), CASES,
                         ids=[f"{m.__name__}-{i}" for i, (m, _) in enumerate(CASES)])
def test_a_model_declares_exactly_the_domain_keys_and_serves_them_unchanged(
        model: type[BaseModel], value: dict[str, Any]) -> None:
    assert declared(model) == set(value)
    assert served_by(model, value, exclude_unset=model is t.PolicyOut) == served(value)


def test_a_policy_leaves_out_what_it_left_out() -> None:
    body = {"specialist": "coding", **POLICY.to_json()}
    assert "rollout_harness" not in body["policy"] and "dataset" in body["policy"]
    assert served_by(t.PolicyOut, body, exclude_unset=True)["policy"] == body["policy"]
