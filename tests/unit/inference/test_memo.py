"""The answer memo: a greedy answer is generated once per (bytes, prompt, settings) and
read back after; a seeded job once per whole job; every sample carries its key, and what a
record keeps of them says how many were reused and which keys, in order."""

from __future__ import annotations

from pathlib import Path

from inference.memo import AnswerMemo, key_of, keys_digest, provenance, through
from inference.types import GenStats, Sample

FIELDS = {"base": "b" * 64, "adapter": None, "max_new_tokens": 8}


class Model:
    """Answers each prompt with its token ids spelled out, and counts what it was asked."""

    def __init__(self) -> None:
        self.asked: list[list[list[int]]] = []

    def __call__(self, prompts: list[list[int]]) -> list[Sample]:
        self.asked.append(prompts)
        return [Sample(i, "-".join(map(str, p)), len(p), True) for i, p in enumerate(prompts)]


def test_a_greedy_answer_is_generated_once_and_read_back_after(tmp_path: Path) -> None:
    memo, model = AnswerMemo(tmp_path), Model()
    first = through(memo, FIELDS, [[1, 2], [3]], False, model)
    stats = GenStats()
    again = through(memo, FIELDS, [[3], [4], [1, 2]], False, model, stats)
    assert model.asked == [[[1, 2], [3]], [[4]]]  # only the new prompt was generated
    assert [s.text for s in again] == ["3", "4", "1-2"] and stats.reused == 2
    assert [s.reused for s in again] == [True, False, True]
    assert [s.memo for s in again] == [first[1].memo, key_of({**FIELDS, "prompt": [4]}), first[0].memo]
    assert provenance(again) == {"reused": 2, "generated": 1,
                                 "keys_sha256": keys_digest([s.memo for s in again])}


def test_other_bytes_or_settings_are_other_answers(tmp_path: Path) -> None:
    memo, model = AnswerMemo(tmp_path), Model()
    through(memo, FIELDS, [[1]], False, model)
    through(memo, {**FIELDS, "adapter": "a" * 64}, [[1]], False, model)
    through(memo, {**FIELDS, "max_new_tokens": 9}, [[1]], False, model)
    assert len(model.asked) == 3


def test_a_seeded_job_is_kept_whole(tmp_path: Path) -> None:
    memo, model = AnswerMemo(tmp_path), Model()
    fields = {**FIELDS, "temperature": 0.5, "seed": 3}
    first = through(memo, fields, [[1], [2]], True, model)
    assert through(memo, fields, [[1], [2]], True, model) == [
        Sample(s.prompt_index, s.text, s.new_tokens, s.stopped, s.memo, True) for s in first]
    through(memo, fields, [[2], [1]], True, model)  # another batch: another draw
    assert len(model.asked) == 2


def test_without_a_memo_nothing_is_recorded() -> None:
    assert provenance([Sample(0, "x", 1, True)]) is None and provenance([]) is None
