"""Answers already generated, kept on disk by what determines them, so none is generated
twice: the parent's greedy answers to the held-out and probe tasks at every generation,
the base's answers to the held-out tasks it served at generation 0, a general probe set
every specialist's gate asks.

A greedy answer's key is the sha256 of (base weights digest, adapter digest, the
precision and device kind it ran in, the prompt's token ids, the token budget, the stop
rule); a seeded job's key is the whole job's (every prompt's ids, k, temperature, seed,
batch rows: a draw depends on its batch), and the entry holds all its samples. An entry
is a JSON file named by its key that also holds the key's fields, so anyone can replay
it: load those bytes, render that prompt, decode, compare. Writes are atomic (a temporary
file renamed); two processes that write the same key write the same answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from inference.types import GenStats, Sample
from trainer.gate.shapes import MemoProvenance

# Samples for these prompts (token ids), prompt_index counting from 0 in this list.
Generate = Callable[[list[list[int]]], list[Sample]]
KEPT = ("prompt_index", "text", "new_tokens", "stopped")

FORMAT = 1


def key_of(fields: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps({"format": FORMAT, **fields}, sort_keys=True,
                                     separators=(",", ":")).encode()).hexdigest()


def keys_digest(keys: Sequence[str | None]) -> str:
    """One digest of an ordered list of answer keys (what a gate record keeps)."""
    return hashlib.sha256("\n".join(k or "-" for k in keys).encode()).hexdigest()


class AnswerMemo:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> list[Sample] | None:
        try:
            doc = json.loads(self._path(key).read_text())
        except (FileNotFoundError, ValueError):
            return None
        return [Sample(**{k: s[k] for k in KEPT}, memo=key, reused=True) for s in doc["samples"]]

    def put(self, key: str, fields: dict[str, Any], samples: Sequence[Sample]) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"format": FORMAT, "key": fields,
               "samples": [{k: getattr(s, k) for k in KEPT} for s in samples]}
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, ensure_ascii=False)
        os.replace(tmp, path)


def through(memo: AnswerMemo, fields: dict[str, Any], ids: list[list[int]], sampled: bool,
            generate: Generate, stats: GenStats | None = None) -> list[Sample]:
    """The samples for ``ids``, from the memo where it has them, else generated and kept.

    Greedy answers are kept per prompt (a greedy answer depends on its prompt only); a
    seeded job is kept whole (a draw depends on its batch). Every sample carries its key."""
    if sampled:
        key = key_of({**fields, "prompts": ids})
        kept = memo.get(key)
        if kept is None:
            memo.put(key, {**fields, "prompts": ids}, generated := generate(ids))
            return [replace(s, memo=key) for s in generated]
        if stats is not None:
            stats.reused += len(kept)
        return kept
    keys = [key_of({**fields, "prompt": p}) for p in ids]
    answers = [memo.get(k) for k in keys]
    todo = [i for i, a in enumerate(answers) if a is None]
    fresh = generate([ids[i] for i in todo]) if todo else []
    for n, i in enumerate(todo):
        mine = [replace(s, prompt_index=0, memo=keys[i]) for s in fresh if s.prompt_index == n]
        memo.put(keys[i], {**fields, "prompt": ids[i]}, mine)
        answers[i] = mine
    if stats is not None:
        made = set(todo)
        stats.reused += sum(len(a or []) for i, a in enumerate(answers) if i not in made)
    return [replace(s, prompt_index=i) for i, found in enumerate(answers) for s in found or []]


def provenance(samples: Sequence[Sample]) -> MemoProvenance | None:
    """What a record keeps of where its answers came from: how many the memo gave, how many
    were generated, and one digest of their keys in order (None without a memo)."""
    if not samples or any(s.memo is None for s in samples):
        return None
    return {"reused": sum(s.reused for s in samples), "generated": sum(not s.reused for s in samples),
            "keys_sha256": keys_digest([s.memo for s in samples])}
