"""The held-out leak: a subject one contract's gate held out must never train a successor,
whichever contracts score it and whatever a trigger policy leaves unsaid.

The scenario as it was found: a trigger policy set over the API without `contract`; two
published contracts with different `[evaluation.split]` sections score every session; the
root version is gated on one contract's held-out subjects, the other contract is
published later and re-scores history, and the child's manifest took each subject's
latest reward, so subjects held out by the parent's gate became the child's train
examples. Here the evaluator makes every reward, as in production.
"""

from __future__ import annotations

from sqlalchemy import select

from contract.policy import TriggerPolicy
from evaluators.tables import reward_records
from tests.unit.evaluators.factories import contract_text, publish
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.fixtures import fake_model_dir, fake_train

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder

# Split rule 1 let each contract choose: the harness's by prompt, the other's by session.
HARNESS = contract_text(name="harness", eligible="true", extra=(
    '[evaluation.split]\nheld_out_fraction = 0.5\nseed = 2\nby = "user_text"\n'))
OTHER = contract_text(name="default", eligible="true", extra=(
    "[evaluation.split]\nheld_out_fraction = 0.5\nseed = 1\n"))


def ask(parts, first: int, n: int) -> None:
    """``n`` sessions of one answered turn each, every one with its own question."""
    from events.model import EventMetadata, NewEvent

    meta = EventMetadata(specialist="coding", adapter_version="coding@0")
    for i in range(first, first + n):
        stream = f"leak-session-{i}"
        parts.store.append([
            NewEvent(stream, "turn.user", {"text": f"Write function number {i}."}, metadata=meta),
            NewEvent(stream, "route.decided", {"specialist": "coding"}, metadata=meta),
            NewEvent(stream, "turn.assistant", {"text": f"def f{i}(): pass"}, metadata=meta),
            NewEvent(stream, "episode.completed", {"outcome": "success"}, metadata=meta)])
    parts.evaluator(group="leak").drain(timeout=120)


def sides(parts, manifest_id: str) -> tuple[set[str], set[str]]:
    members = parts.manifests.rebuild(manifest_id).examples
    return ({m.subject_id for m in members if m.split == "train"},
            {m.subject_id for m in members if m.split == "held_out"})


def test_a_subject_held_out_by_a_parents_gate_never_trains_its_child(parts, tmp_path):
    publish(parts.contracts, HARNESS, name="harness")
    parts.registry.register_base_model("tiny", fake_model_dir(tmp_path / "base"), "t")
    parts.policies.configure("coding", TriggerPolicy(min_new_rewards=1), "t")  # no `contract`
    ask(parts, 0, 24)
    root = parts.triggers.fire_manual("coding", "t", "root")
    parent = fake_train(parts, root.run_id)
    parts.aliases.move("coding", "production", parent.adapter_id, "t", "serve it")
    _, gated = sides(parts, parent.manifest_id)
    assert gated  # the parent's gate held some subjects out

    publish(parts.contracts, OTHER, name="default")  # re-scores history under its own split
    ask(parts, 24, 8)
    child = parts.triggers.fire_manual("coding", "t", "child")
    manifest_id = parts.runs.get(child.run_id).manifest_id
    trained, _ = sides(parts, manifest_id)
    assert trained and not trained & gated
    assert parts.manifests.leaks(manifest_id, parent.adapter_id, "child") == []
    # one contract's rewards: the parent's
    manifest = parts.manifests.row(manifest_id)
    assert {c["name"] for c in manifest.contract_versions} == {"harness"}


def test_every_contract_puts_a_subject_on_the_same_side(parts):
    from contract.split import subject_split

    publish(parts.contracts, HARNESS, name="harness")
    publish(parts.contracts, OTHER, name="default")
    ask(parts, 0, 30)
    with parts.engine.connect() as conn:
        rows = conn.execute(select(reward_records.c.subject_id, reward_records.c.contract_name,
                                   reward_records.c.split)).all()
    by_subject: dict[str, set[str]] = {}
    for subject, _, split in rows:
        by_subject.setdefault(subject, set()).add(split)
    assert len(rows) == 60 and all(len(s) == 1 for s in by_subject.values())
    assert {next(iter(s)) for s in by_subject.values()} == {"train", "held_out"}
    for subject, found in by_subject.items():  # the rule on the subject's user text alone
        number = subject.split(":")[1].removeprefix("leak-session-")
        assert found == {subject_split(subject, f"Write function number {number}.")}
