"""The learned router's pure parts: which logged turns teach it (and on which side of the
split), its gate, and the classifier itself on features whose classes are known."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from contract.split import subject_split
from events.memory_store import InMemoryEventStore
from events.model import EventMetadata, NewEvent
from harness.routing import learned_input, routing_input
from harness.routing.examples import REWARD, TASK, candidates, labelled
from harness.routing.gate import judge, wilson


def _log(*sessions: list[tuple[str, dict]]) -> list:
    store = InMemoryEventStore()
    for n, events in enumerate(sessions):
        store.append([NewEvent(stream_id=f"session-{n}", type=kind, payload=payload,
                               metadata=EventMetadata()) for kind, payload in events])
    return store.read_all(0, 1000)


def test_a_turn_teaches_its_tasks_specialist_or_a_rewarded_answerers() -> None:
    events = _log(
        [("turn.user", {"text": "Write a function", "task": {"specialist": "coding"},
                        "context": [{"role": "system", "content": "You write Python."}]}),
         ("route.decided", {"specialist": "chat"})],  # misrouted: the task says coding
        [("turn.user", {"text": "hello"}), ("route.decided", {"specialist": "chat",
                                                              "routed_on": "App: greeter\nhello"})],
        [("turn.user", {"text": "bye"}), ("route.decided", {"specialist": "chat"})],
        [("route.decided", {"specialist": "chat"})])  # no turn: nothing to learn from
    found = candidates(events)
    assert [c.text for c in found] == ["You write Python.\nWrite a function", "App: greeter\nhello", "bye"]
    rewards = {"session-1": 0.9, "session-2": 0.1}
    examples = labelled(found, {"chat", "coding"}, rewards, min_reward=0.5)
    assert [(e.label, e.source) for e in examples] == [("coding", TASK), ("chat", REWARD)]
    assert [e.side for e in examples] == [subject_split(t, t) for t in ("Write a function", "hello")]
    assert labelled(found, {"chat"}, rewards, 0.5)[0].label == "chat"  # coding is not a label here
    assert learned_input(routing_input(["s" * 5000], "the user")).endswith("\nthe user")


def test_the_gate_promotes_a_router_not_worse_than_the_incumbent() -> None:
    truth = ["a", "b"] * 20
    better = judge(truth, ["a"] * 40, truth, "keywords", margin=0.05, min_held_out=20)
    assert better.promote and better.accuracy == 1.0 and better.incumbent_accuracy == 0.5
    assert better.difference["low"] > 0 and "not worse than keywords" in better.reason
    worse = judge(["a"] * 40, truth, truth, "serve@1", margin=0.05, min_held_out=20)
    assert not worse.promote and worse.difference["high"] < 0
    few = judge(truth[:4], truth[:4], truth[:4], "keywords", 0.05, 20)
    assert not few.promote and "fewer than the 20" in few.reason
    low, high = wilson(45, 50)
    assert low < 0.9 < high and wilson(0, 0) == (0.0, 1.0)


def test_the_classifier_learns_separable_classes_and_survives_its_artifact(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from harness.routing.classifier import fit, load

    gen = torch.Generator().manual_seed(0)
    centres = {"chat": torch.randn(16, generator=gen) * 3, "coding": torch.randn(16, generator=gen) * 3}
    labels = ["chat", "coding"] * 30
    features = torch.stack([centres[x] + torch.randn(16, generator=gen) for x in labels])
    classifier = fit(features, labels, seed=0)
    scores = classifier.predict(features)
    assert [max(sorted(s), key=s.__getitem__) for s in scores] == labels
    assert all(sum(s.values()) == pytest.approx(1.0, abs=1e-4) for s in scores)
    again, config = load(classifier.save(tmp_path / uuid.uuid4().hex, "tiny", "w" * 64))
    assert again.predict(features) == scores and config["base_weights_sha256"] == "w" * 64
