"""The learned router end to end in one process, on the tiny model and an embedded
database: trained from the log's turns whose specialist is known (harness tasks, and
gateway turns the evaluator rewarded), registered with what it came from, gated on the
held-out turns against the keyword router, promoted, and then routing ``auto`` turns for
a contract that names it; a rollback takes effect on the next request."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]


@pytest.fixture
def world(tmp_path: Path, sqlite_url: str) -> Iterator[Any]:
    from hcp.bootstrap import Container
    from hcp.settings import Settings
    from kernel.db import make_engine
    from tests.serving_world import CONTRACT, build_world
    from tests.unit.trainer_core.fixtures import RecordingDispatcher

    settings = Settings(database_url=sqlite_url, data_dir=tmp_path / "data",
                        models_dir=tmp_path / "models", serving_contract=CONTRACT,
                        kafka_bootstrap="", redis_url="")
    c = Container(settings=settings, engine=make_engine(sqlite_url), dispatch_to=RecordingDispatcher())
    build_world(c, tmp_path / "models")
    try:
        yield c
    finally:
        c.close()


def _record_tasks(c: Any, specialists: tuple[str, ...], n: int) -> None:
    """The built-in harness's sessions for ``n`` tasks of each family (a short answer each)."""
    from events.ingest import Author, IngestLimits, ingest
    from harness.checks.result import CheckResult
    from harness.router import Route
    from harness.session import Served, session_events
    from harness.tasks.catalog import train_tasks

    def split(text: str) -> str:
        return "train"  # draw from every task (the router's own split decides its sides)

    events = []
    for specialist in specialists:
        for task in train_tasks(specialist, n, split):
            served = Served(task, Route("chat", {}, True), "chat@0", "serve@1", "ok", 1,
                            CheckResult("format", False, 0.0), 0)
            events += session_events(served, "hcp-harness", uuid.uuid4())
    limits = IngestLimits(c.settings.max_batch_events, c.settings.max_payload_bytes)
    for start in range(0, len(events), 500):
        ingest(c.store, events[start:start + 500], limits, Author("harness:test"), c.references)


def _record_rewarded_turns(c: Any, texts: list[str]) -> list[str]:
    """Gateway-like sessions with no task: coding answered, the episode ended (scored)."""
    from events.ingest import Author, ClientEvent, IngestLimits, ingest

    streams, events = [], []
    for text in texts:
        stream = f"session-{uuid.uuid4()}"
        streams.append(stream)
        routed = {"specialist": "coding", "adapter_version": "coding@0", "routed_on": text}
        events += [ClientEvent(stream, kind, payload, specialist="coding", adapter_version="coding@0",
                               contract="serve@1")
                   for kind, payload in [("session.started", {"harness": "hcp-gateway"}),
                                         ("turn.user", {"text": text}), ("route.decided", routed),
                                         ("turn.assistant", {"text": "def f(): pass"}),
                                         ("episode.completed", {"outcome": "success"})]]
    ingest(c.store, events, IngestLimits(1000, 1 << 20), Author("key:test"), c.references)
    c.evaluator("router-test").drain(timeout=60)
    return streams


def test_a_router_trained_from_the_log_is_registered_gated_and_serves(world: Any) -> None:
    from harness.routing.events import RouterVersions
    from harness.routing.training import RouterOptions, TooFewExamples
    from hcp.serving_root import build_learned_routing, build_router_trainer
    from inference.names import parse_model
    from serving.choice import Chooser
    from tests.serving_world import CONTRACT, DOCUMENT

    c = world
    trainer = build_router_trainer(c, "cpu")
    _record_tasks(c, ("coding",), 12)
    with pytest.raises(TooFewExamples, match="two or more"):
        trainer.train(CONTRACT, "tester")
    _record_tasks(c, ("chat",), 12)
    rewarded = _record_rewarded_turns(c, [f"please fix my python function number {i}" for i in range(6)])

    trained = trainer.train(CONTRACT, "tester", RouterOptions(min_held_out=8))
    r = trained.version.registered
    assert (trained.version.ref, r.labels, r.base_model) == (f"{CONTRACT}@1", ["chat", "coding"], "tiny")
    assert r.base_weights_sha256 == c.registry.base_model("tiny").weights_sha256
    assert r.examples["source:task"] == 24 and r.examples["source:reward"] == 6
    assert r.examples["train"] + r.examples["held_out"] == 30 and r.examples["held_out"] >= 8
    assert not set(r.train_event_ids) & set(r.held_out_event_ids)
    logged = {str(e.event_id): e for e in c.store.read_all(0, 10_000)}
    assert {logged[i].type for i in [*r.train_event_ids, *r.held_out_event_ids]} == {"route.decided"}
    assert {logged[i].stream_id for i in [*r.train_event_ids, *r.held_out_event_ids]} >= set(rewarded)
    assert c.artifacts.open_dir(r.artifact_sha256).joinpath("router.json").exists()  # re-hashed
    gate = r.gate
    assert gate["n"] == r.examples["held_out"] and gate["incumbent"] == "keywords"
    low, high = gate["accuracy_interval"]
    assert low <= gate["accuracy"] <= high
    assert gate["promote"] == (gate["difference"]["low"] > -gate["margin"]) == trained.promoted
    routers = RouterVersions(c.store)
    assert (routers.production(CONTRACT) is not None) == trained.promoted

    # The serving contract names the learned router: its next version serves.
    draft = c.contracts.create_draft(CONTRACT, DOCUMENT.replace('strategy = "keywords"',
                                                                'strategy = "learned"'), "tester")
    c.contracts.publish(CONTRACT, draft.version, "tester")
    c.serving.move(CONTRACT, None, draft.version, "tester", "route by the learned router")
    chooser = Chooser(CONTRACT, c.serving, c.contracts, c.resolver, build_learned_routing(c))
    text = "please fix my python function"
    if not trained.promoted:
        unrouted = chooser.choose(parse_model("auto"), text)
        assert unrouted.strategy == "keywords" and "no learned router" in unrouted.notes[0]
        routers.promote(CONTRACT, 1, "tester", "serve it anyway: the test routes with it")
    routed = chooser.choose(parse_model("auto"), text)
    assert (routed.strategy, routed.router_version, routed.router_digest) == \
        ("learned", f"{CONTRACT}@1", r.artifact_sha256)
    assert set(routed.route.scores) == {"chat", "coding"}
    assert sum(routed.route.scores.values()) == pytest.approx(1.0, abs=1e-4)
    scores = routed.route.scores
    assert routed.specialist == max(scores, key=lambda name: scores[name])

    second = trainer.train(CONTRACT, "tester", RouterOptions(min_held_out=8))
    assert second.version.ref == f"{CONTRACT}@2" and second.gate.incumbent == f"{CONTRACT}@1"
    routers.promote(CONTRACT, 2, "tester", "the newer one")
    assert chooser.choose(parse_model("auto"), text).router_version == f"{CONTRACT}@2"
    routers.promote(CONTRACT, 1, "tester", "roll back")  # the next request already sees it
    assert chooser.choose(parse_model("auto"), text).router_version == f"{CONTRACT}@1"
