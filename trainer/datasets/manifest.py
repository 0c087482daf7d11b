"""Dataset manifests: which rewards and events a run trains on, frozen by a content hash.

Pure: the registry reads the rows, this module decides. ``assemble`` is called twice
for every run: when the trigger fires (the manifest is frozen and stored) and in the
worker (the examples are rebuilt from the stored ids). Both calls see the same
append-only rows, so both produce the same bytes; the worker refuses to train when the
rebuilt content hash differs from the stored one (an erased payload, say).

Example extraction: the response is the subject's last assistant text, the prompt is
the transcript before it (user turns, earlier answers, tool calls and results) ending
with ``Assistant: ``; the reward is the record's score under its contract version. When
the harness recorded what the model was given (a ``context`` list of chat messages in
the first ``turn.user`` payload: system message, example exchanges), the example also
carries ``messages``: that context and the subject's user and assistant turns before the
response, which the trainer renders with the model's chat template exactly as it was
served (``trainer.ml.prompts``).

The manifest holds every rewarded subject, so several answers to the same prompt (a
harness that samples k answers per task) are all there; which of them train is the run's
``selection`` hyper-parameter (best of k, best and worst, or all: ``trainer.ml.data``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.subject import Subject
from kernel.canonical import canonical_sha256
from trainer.ml.data import Message, TrainingExample, example_json

TRAIN, HELD_OUT = "train", "held_out"


@dataclass(frozen=True)
class RewardRow:
    reward_id: str
    position: int
    subject_id: str
    event_ids: tuple[str, ...]
    contract_name: str
    contract_version: int
    contract_hash: str
    score: float | None
    components: Mapping[str, float]
    split: str


@dataclass(frozen=True)
class EventView:
    event_id: str
    position: int
    type: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class JudgedSubject:
    """A reward's subject, as stored, and the contract version that scored it."""

    reward_id: str
    subject: Subject
    contract_name: str
    contract_version: int
    contract_hash: str


@dataclass(frozen=True)
class ManifestExample:
    reward_id: str
    subject_id: str
    split: str
    prompt: str
    response: str
    reward: float
    components: dict[str, float] = field(default_factory=dict)
    messages: tuple[Message, ...] | None = None  # what the model was served, when recorded
    # What the user said the answer should have been (``POST /v1/feedback`` ``correction``,
    # the last one sent for this answer); None without one. A run with ``hyper.traffic``
    # trains it as a better answer to the same prompt (trainer/datasets/traffic.py).
    correction: str | None = None

    def training_example(self) -> TrainingExample:
        return TrainingExample(prompt=self.prompt, response=self.response, reward=self.reward,
                               weight=1.0, subject_id=self.subject_id, messages=self.messages)


@dataclass(frozen=True)
class Manifest:
    specialist: str
    cut_from: int
    cut_to: int
    reward_ids: tuple[str, ...]
    subject_event_ids: dict[str, list[str]]
    contract_versions: tuple[dict[str, Any], ...]
    split: dict[str, int]
    examples_sha256: str
    examples: tuple[ManifestExample, ...] = field(repr=False)

    @property
    def content_hash(self) -> str:
        return manifest_hash(self.content())

    def content(self) -> dict[str, Any]:
        """The hashed content: everything but the example texts (covered by their hash)."""
        return {
            "specialist": self.specialist, "cut_from": self.cut_from, "cut_to": self.cut_to,
            "reward_ids": list(self.reward_ids), "subject_event_ids": self.subject_event_ids,
            "contract_versions": list(self.contract_versions), "split": self.split,
            "examples_sha256": self.examples_sha256,
        }

    def split_examples(self, split: str) -> list[ManifestExample]:
        return [ex for ex in self.examples if ex.split == split]


def manifest_hash(content: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a manifest's content (stored rows re-hash the same)."""
    return canonical_sha256(dict(content))


def select_rewards(rows: Iterable[RewardRow]) -> list[RewardRow]:
    """One reward per subject, the latest by position (a re-score supersedes), in position order."""
    latest: dict[str, RewardRow] = {}
    for row in rows:
        if row.score is None:
            continue
        kept = latest.get(row.subject_id)
        if kept is None or row.position > kept.position:
            latest[row.subject_id] = row
    return sorted(latest.values(), key=lambda r: r.position)


def assemble(
    specialist: str, cut_from: int, cut_to: int,
    rewards: Sequence[RewardRow], events: Mapping[str, EventView],
) -> Manifest:
    """The manifest of ``rewards`` (already selected), with the examples they yield.

    A reward whose subject has no user text or no assistant answer yields no example
    and is left out of the manifest, so every listed reward is used.
    """
    return combine(specialist, cut_from, cut_to, [(row, example_of(row, events)) for row in rewards])


def example_of(row: RewardRow, events: Mapping[str, EventView]) -> ManifestExample | None:
    """The example a reward yields (None: its subject has nothing to learn, or no score)."""
    found = [events[e] for e in row.event_ids if e in events]
    pair = extract_pair(found)
    if pair is None or row.score is None:
        return None
    return ManifestExample(
        reward_id=row.reward_id, subject_id=row.subject_id, split=row.split,
        prompt=pair[0], response=pair[1], reward=float(row.score),
        components={k: float(v) for k, v in sorted(row.components.items())},
        messages=extract_messages(found), correction=extract_correction(found),
    )


def combine(specialist: str, cut_from: int, cut_to: int,
            built: Sequence[tuple[RewardRow, ManifestExample | None]],
            line: Callable[[ManifestExample], bytes] | None = None) -> Manifest:
    """The manifest of rewards and the examples they yielded (``example_of``), in order;
    ``line``: each example's digest line, when the caller keeps them (else computed)."""
    used = [row for row, example in built if example is not None]
    examples = [example for _, example in built if example is not None]
    versions = sorted({(r.contract_name, r.contract_version, r.contract_hash) for r in used})
    return Manifest(
        specialist=specialist, cut_from=cut_from, cut_to=cut_to,
        reward_ids=tuple(r.reward_id for r in used),
        subject_event_ids={r.subject_id: list(r.event_ids) for r in used},
        contract_versions=tuple({"name": n, "version": v, "hash": h} for n, v, h in versions),
        split={TRAIN: sum(e.split == TRAIN for e in examples),
               HELD_OUT: sum(e.split == HELD_OUT for e in examples)},
        examples_sha256=examples_digest(examples, line), examples=tuple(examples),
    )


def examples_digest(examples: Iterable[ManifestExample],
                    line: Callable[[ManifestExample], bytes] | None = None) -> str:
    """sha256 over the examples' canonical JSON, one line each, in manifest order."""
    return examples_digest_of(line(ex) if line is not None else example_line(ex) for ex in examples)


def examples_digest_of(lines: Iterable[bytes]) -> str:
    """``examples_digest`` of the examples' lines (``example_line``)."""
    h = hashlib.sha256()
    for text in lines:
        h.update(text)
        h.update(b"\n")
    return h.hexdigest()


def example_line(example: ManifestExample) -> bytes:
    """An example's line of the digest (without ``messages`` when there are none)."""
    return example_json(example).encode()


def extract_pair(events: Sequence[EventView]) -> tuple[str, str] | None:
    """(prompt, response) of a subject's events, or None when there is nothing to learn."""
    ordered = sorted(events, key=lambda e: e.position)
    lines: list[str] = []
    prompt: str | None = None
    response: str | None = None
    saw_user = False
    for event in ordered:
        if event.type == "turn.assistant" and saw_user:
            prompt, response = "\n".join([*lines, "Assistant: "]), str(event.payload.get("text", ""))
        line = _transcript_line(event)
        if line is not None:
            lines.append(line)
            saw_user = saw_user or event.type == "turn.user"
    if prompt is None or not response:
        return None
    return prompt, response


def extract_messages(events: Sequence[EventView]) -> tuple[Message, ...] | None:
    """The chat messages before the last assistant answer, when the first user turn
    recorded its ``context`` (else None: the transcript prompt is all there is)."""
    ordered = sorted(events, key=lambda e: e.position)
    turns = [e for e in ordered if e.type in ("turn.user", "turn.assistant")]
    last = max((i for i, e in enumerate(turns) if e.type == "turn.assistant"), default=None)
    if last is None or not turns or turns[0].type != "turn.user":
        return None
    context = turns[0].payload.get("context")
    if not isinstance(context, list) or not all(_is_message(m) for m in context):
        return None
    said = [("user" if e.type == "turn.user" else "assistant", str(e.payload.get("text", "")))
            for e in turns[:last]]
    return tuple((str(m["role"]), str(m["content"])) for m in context) + tuple(said)


def extract_correction(events: Sequence[EventView]) -> str | None:
    """The last correction sent for the subject's last answer (feedback after it)."""
    ordered = sorted(events, key=lambda e: e.position)
    last = max((i for i, e in enumerate(ordered) if e.type == "turn.assistant"), default=None)
    if last is None:
        return None
    found = [e.payload.get("correction") for e in ordered[last + 1:] if e.type == "feedback.given"]
    texts = [text for text in found if isinstance(text, str) and text.strip()]
    return texts[-1] if texts else None


def _is_message(value: Any) -> bool:
    return (isinstance(value, Mapping) and value.get("role") in ("system", "user", "assistant")
            and isinstance(value.get("content"), str))


def _transcript_line(event: EventView) -> str | None:
    payload = event.payload
    if event.type == "turn.user":
        return f"User: {payload.get('text', '')}"
    if event.type == "turn.assistant":
        return f"Assistant: {payload.get('text', '')}"
    if event.type == "tool.called":
        args = json.dumps(payload.get("arguments", {}), sort_keys=True, ensure_ascii=False)
        return f"Tool call {payload.get('tool', '?')}: {args}"
    if event.type == "tool.result":
        body = payload.get("output") if payload.get("ok") else {"error": payload.get("error")}
        return f"Tool result: {json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)}"
    return None
