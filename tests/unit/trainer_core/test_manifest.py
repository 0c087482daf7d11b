from trainer.datasets.manifest import (
    EventView,
    RewardRow,
    assemble,
    extract_pair,
    manifest_hash,
    select_rewards,
)


def ev(i: int, type_: str, **payload) -> EventView:
    return EventView(f"e{i}", i, type_, payload)


def reward(i: int, subject: str, events: tuple[str, ...], score: float | None = 0.5,
           split: str = "train", version: int = 1) -> RewardRow:
    return RewardRow(f"r{i}", i, subject, events, "default", version, f"h{version}", score,
                     {"quality": score or 0.0}, split)


EVENTS = {e.event_id: e for e in [
    ev(1, "turn.user", text="hi"), ev(2, "turn.assistant", text="hello"),
    ev(3, "turn.user", text="sum 2+2"),
    ev(4, "tool.called", call_id="c", tool="calc", arguments={"x": "2+2"}),
    ev(5, "tool.result", call_id="c", ok=True, output=4), ev(6, "turn.assistant", text="4"),
    ev(7, "feedback.given", rating=1.0),
    ev(8, "turn.user", text="no answer"),
]}


def test_prompt_is_the_transcript_before_the_last_answer():
    pair = extract_pair([EVENTS[f"e{i}"] for i in (7, 6, 5, 4, 3, 2, 1)])
    assert pair == ("User: hi\nAssistant: hello\nUser: sum 2+2\nTool call calc: {\"x\": \"2+2\"}\n"
                    "Tool result: 4\nAssistant: ", "4")


def test_a_subject_without_an_answer_yields_nothing():
    assert extract_pair([EVENTS["e8"]]) is None
    assert extract_pair([EVENTS["e2"]]) is None  # an answer with no user turn before it


def test_latest_reward_per_subject_wins_and_errors_are_dropped():
    rows = [reward(1, "s1", ("e1",), 0.2), reward(5, "s1", ("e1",), 0.9, version=2),
            reward(3, "s2", ("e3",), None), reward(4, "s3", ("e3",))]
    assert [r.reward_id for r in select_rewards(rows)] == ["r4", "r5"]


def test_manifest_lists_only_rewards_that_yield_examples_and_counts_the_split():
    rows = [reward(1, "t1", ("e1", "e2")), reward(2, "t2", ("e3", "e4", "e5", "e6"), 0.9, "held_out"),
            reward(3, "t3", ("e8",))]
    manifest = assemble("coding", 0, 3, rows, EVENTS)
    assert manifest.reward_ids == ("r1", "r2")
    assert manifest.split == {"train": 1, "held_out": 1}
    assert manifest.subject_event_ids == {"t1": ["e1", "e2"], "t2": ["e3", "e4", "e5", "e6"]}
    assert manifest.contract_versions == ({"name": "default", "version": 1, "hash": "h1"},)
    assert manifest.split_examples("held_out")[0].response == "4"
    assert manifest.examples[0].training_example().reward == 0.5


def test_rebuilding_from_the_same_rows_gives_the_same_bytes_and_hash():
    rows = [reward(1, "t1", ("e1", "e2")), reward(2, "t2", ("e3", "e6"))]
    first, second = assemble("coding", 0, 2, rows, EVENTS), assemble("coding", 0, 2, rows, dict(EVENTS))
    assert first.examples_sha256 == second.examples_sha256
    assert first.content_hash == second.content_hash == manifest_hash(first.content())


def test_any_change_to_an_example_changes_the_hash():
    rows = [reward(1, "t1", ("e1", "e2"))]
    before = assemble("coding", 0, 1, rows, EVENTS)
    edited = dict(EVENTS, e2=ev(2, "turn.assistant", text="hello!"))
    after = assemble("coding", 0, 1, rows, edited)
    assert before.reward_ids == after.reward_ids
    assert before.content_hash != after.content_hash


def test_content_hash_is_independent_of_key_order():
    content = {"b": 1, "a": [1, 2], "c": {"y": 1, "x": 2}}
    assert manifest_hash(content) == manifest_hash(dict(reversed(list(content.items()))))
