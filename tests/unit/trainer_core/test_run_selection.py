"""Which examples a run trains on: derived from the manifest and the hyper-parameters alone,
and the audit's check that a recorded selection is what they derive."""

from __future__ import annotations

from audit.checks.training import check_selections
from audit.report import Findings
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata
from trainer.datasets.manifest import HELD_OUT, TRAIN, Manifest, ManifestExample
from trainer.ml.data import examples_sha256
from trainer.runs.events import TrainingQueued, TrainingSucceeded
from trainer.runs.selection import selection_of


def example(reward_id: str, prompt: str, response: str, reward: float, split: str = TRAIN) -> ManifestExample:
    return ManifestExample(reward_id=reward_id, subject_id=f"s-{reward_id}", split=split, prompt=prompt,
                           response=response, reward=reward)


MANIFEST = Manifest(specialist="coding", cut_from=0, cut_to=9, reward_ids=("a", "b", "c", "h"),
                    subject_event_ids={}, contract_versions=(), split={TRAIN: 3, HELD_OUT: 1},
                    examples_sha256="x", examples=(
                        example("a", "P", "good", 1.0), example("b", "P", "bad", 0.1),
                        example("c", "Q", "fine", 0.6), example("h", "P", "held", 1.0, HELD_OUT)))


def test_best_of_k_keeps_the_best_answer_per_prompt_by_reward_id() -> None:
    chosen = selection_of(MANIFEST, {"selection": "best_of_k", "keep_per_prompt": 1})
    assert chosen.reward_ids == ["a", "c"]
    trained = [ex.training_example() for ex in MANIFEST.examples if ex.reward_id in ("a", "c")]
    assert chosen.examples_sha256 == examples_sha256(trained)
    assert sorted(selection_of(MANIFEST, {}).reward_ids) == ["a", "b", "c"]  # all, held-out left out


def test_a_recorded_selection_must_be_what_the_hyper_parameters_pick() -> None:
    store, meta = InMemoryEventStore(), EventMetadata(actor="w")
    hyper = {"selection": "best_of_k"}
    queued = TrainingQueued(run_id="r", parent_adapter_id=None, base_model="b", manifest_id="m",
                            firing_id="f", hyper=hyper, reason="x", gate={}, total_steps=1)
    right = selection_of(MANIFEST, hyper)

    def succeeded(examples: list[str]) -> TrainingSucceeded:
        return TrainingSucceeded(run_id="r", attempt=1, adapter_id="coding@1", status="candidate",
                                 artifact_sha256="a", gate_reason="g", examples=examples,
                                 examples_sha256=right.examples_sha256)

    for examples, ok in ((right.reward_ids, True), (["a", "b"], False)):
        events = [store.append([e.new_event("training_run:r", meta)])[0].event
                  for e in (queued, succeeded(examples))]
        found = Findings("training_examples", "t", "e")
        check_selections(found, events[-2:], lambda manifest_id: MANIFEST)
        assert found.ok is ok and found.checked == 1
        if not ok:
            assert found.mismatches[0].subject == "training_runs run_id=r"
