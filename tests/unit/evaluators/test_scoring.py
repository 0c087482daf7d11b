"""Scoring finished subjects into reward records: what gets recorded, and what does not."""

from __future__ import annotations

import hashlib
import pickle
import uuid
from dataclasses import replace

import pytest

from contract.document import parse_contract
from contract.evaluate import compile_contract
from contract.subject import finished_subjects
from evaluators import scoring
from evaluators.chain import chained_content, reward_hash
from evaluators.model import EVALUATOR_VERSION, VersionRef, reward_id_for
from evaluators.scoring import ScoringVersion, score_subject
from kernel.canonical import canonical_json
from tests.unit.evaluators.factories import MISSING_FIELD, Stream, contract_text


def version(text: str, number: int = 1) -> ScoringVersion:
    compiled = compile_contract(parse_contract(text))
    return ScoringVersion(VersionRef("default", number, compiled.content_hash), compiled)


def first_turn(thumbs: str | None = "up") -> tuple[Stream, list]:
    stream = Stream(first_position=100)
    stream.turn(thumbs=thumbs)
    stream.turn()
    return stream, finished_subjects(stream.events, "turn")


def test_a_reward_carries_subject_contract_score_and_provenance() -> None:
    stream, [subject] = first_turn()
    v = version(contract_text())

    [reward] = score_subject(subject, [v])

    assert (reward.subject_id, reward.subject_kind) == (f"turn:{stream.stream_id}:1", "turn")
    assert (reward.first_position, reward.last_position) == (100, 102)
    assert reward.event_ids == tuple(str(e.event_id) for e in stream.events[:3])
    assert (reward.contract_name, reward.contract_version, reward.contract_hash) == (
        "default", 1, v.compiled.content_hash)
    assert reward.evaluator_version == EVALUATOR_VERSION
    assert reward.score == 1.0 and reward.components == {"answered": 1.0, "feedback": 1.0}
    assert reward.split in ("train", "held_out")
    assert reward.eligible  # score 1.0 passes "score >= 0.5" on either side of the split
    assert (reward.specialist, reward.adapter_version) == ("chat", "chat@1")
    assert reward.errors == ()
    assert reward.reward_id == reward_id_for(subject.id, "default", 1)


def test_each_applicable_version_scores_and_other_kinds_do_not() -> None:
    _, [subject] = first_turn(thumbs="down")
    versions = [version(contract_text(), 1), version(contract_text(answered_weight=3.0), 2),
                version(contract_text(subject="episode"), 3)]

    rewards = score_subject(subject, versions)

    assert [r.contract_version for r in rewards] == [1, 2]
    assert [r.score for r in rewards] == [0.5, 0.75]


def test_an_expression_that_cannot_evaluate_is_a_recorded_error_not_a_zero() -> None:
    _, [subject] = first_turn()

    [reward] = score_subject(subject, [version(contract_text(feedback=MISSING_FIELD))])

    assert reward.score is None
    assert not reward.eligible
    assert [e["item"] for e in reward.errors] == ["criterion:feedback"]
    assert "rating_hint" in reward.errors[0]["message"]
    assert reward.components == {"answered": 1.0}


def test_a_version_that_does_not_apply_writes_nothing() -> None:
    _, [subject] = first_turn()
    extra = '\n[evaluation.applies_to]\nspecialists = ["coding"]\n'

    assert score_subject(subject, [version(contract_text(extra=extra))]) == []


def test_a_crash_inside_scoring_is_recorded_and_the_next_version_still_scores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, [subject] = first_turn()
    broken, fine = version(contract_text(), 1), version(contract_text(answered_weight=2.0), 2)
    real = scoring.build_input

    def build_input(subject, harness, only=None):  # type: ignore[no-untyped-def]
        if harness is broken.compiled.document.harness:
            raise RuntimeError("boom")
        return real(subject, harness, only)

    monkeypatch.setattr(scoring, "build_input", build_input)
    failed, ok = score_subject(subject, [broken, fine])

    assert failed.score is None and failed.errors[0]["kind"] == "internal"
    assert "boom" in failed.errors[0]["message"]
    assert ok.score == 1.0


def test_reward_json_is_the_wire_form() -> None:
    _, [subject] = first_turn()
    [reward] = score_subject(subject, [version(contract_text())])

    body = reward.to_json()

    assert body["subject"]["id"] == subject.id
    assert body["contract"] == {"name": "default", "version": 1,
                                "content_hash": reward.contract_hash}
    assert body["errors"] == [] and body["score"] == 1.0


def test_a_placed_reward_is_the_record_with_its_position_and_hashes() -> None:
    _, [subject] = first_turn()
    [reward] = score_subject(subject, [version(contract_text())])
    placed = reward.placed(7, "a" * 64, "b" * 64)
    assert placed == replace(reward, position=7, prev_hash="a" * 64, hash="b" * 64)
    assert reward.position is None and reward.hash is None  # the original is untouched


@pytest.mark.parametrize("subject_id", ["turn:s-1:3", "", "épisode:ü-漢:1", "a\x00b", "x" * 300])
def test_reward_ids_are_the_uuid5_of_subject_contract_and_version(subject_id: str) -> None:
    namespace = uuid.UUID("6d1c7f0e-2b55-4d8e-9a41-3f5b8e0c9a17")
    for name, version in (("default", 1), ("bench", 12345), ("ü", 0)):
        made = reward_id_for(subject_id, name, version)
        expected = uuid.uuid5(namespace, f"{subject_id}\x00{name}\x00{version}")
        assert (made, str(made), hash(made), made.version) == (expected, str(expected), hash(expected), 5)
        assert pickle.loads(pickle.dumps(made)) == expected


def test_a_rewards_hash_is_sha256_of_the_previous_hash_and_its_canonical_json() -> None:
    _, [subject] = first_turn()
    [reward] = score_subject(subject, [version(contract_text())])
    odd = replace(reward, specialist="spé\"cial\n漢", errors=({"item": "g", "message": "ü", "kind": "type"},),
                  score=None, components={"b": 0.1 + 0.2, "a": 1.0})
    for record in (reward, odd):
        expected = hashlib.sha256(("p" * 64 + canonical_json(chained_content(record, 9))).encode())
        assert reward_hash("p" * 64, record, 9) == expected.hexdigest()


class _LogDown:
    """An event store that does not answer (the database away)."""

    def get_many(self, *_: object, **__: object) -> dict:
        raise ConnectionError("the database is away")


def test_verdicts_that_cannot_be_read_fail_the_step_not_the_subject() -> None:
    """A judged version's verdicts are read from the log: a store that does not answer is
    the batch's failure (retried whole), never an internal-error reward for the subject."""
    from evaluators.judging import Judging
    from tests.unit.contract.test_judges import JUDGE

    judged = version(contract_text(extra=JUDGE))
    stream, _ = first_turn()
    subjects = finished_subjects(stream.events, "turn")
    with pytest.raises(ConnectionError):
        score_subject(subjects[0], [judged], Judging(_LogDown()), [])  # type: ignore[arg-type]
    awaiting: list = []
    from events.memory_store import InMemoryEventStore

    assert score_subject(subjects[0], [judged], Judging(InMemoryEventStore()), awaiting) == []
    assert [a.subject.id for a in awaiting] == [subjects[0].id]  # no verdict yet: it waits
