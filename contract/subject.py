"""Subjects: the units of experience a contract judges, cut deterministically from a stream.

A stream's events arrive in `stream_seq` order. Two workers that see the same prefix of a
stream must agree on which subjects are finished and on what each contains, so a subject
closes only on an event *in the stream* (never on a clock):

- `episode`: the events after the previous episode end (or from the start of the stream)
  up to and including the next one: `episode.completed` (an explicit end, an OTLP root
  span's end) or `session.expired` (the server's, once, after the contract's idle
  timeout). Closed by that event. Id: `episode:<stream_id>:<seq of its end>`.
- `turn`: a `turn.user` and everything after it (route decision, tool calls and results,
  the assistant's answer, feedback on it) up to, not including, the next `turn.user` or
  episode end. Closed by that next event (a turn is judged when the user answers it), so
  feedback given right after an answer belongs to the turn, and the closing event is
  kept with the subject (``closer``): what the user did next is part of the judgement
  (contract/signals.py). A turn no event closes is never judged; a session that goes
  idle is closed by its `session.expired`. Id: `turn:<stream_id>:<seq of turn.user>`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from contract.vocabulary import EPISODE_ENDS, TURN_USER
from events.model import RecordedEvent


@dataclass(frozen=True)
class Subject:
    id: str
    kind: str  # "turn" | "episode"
    stream_id: str
    events: tuple[RecordedEvent, ...]
    # The event that closed it: an episode's own last event; a turn's next `turn.user` or
    # episode end (not one of its events). None for a subject built by other means.
    closer: RecordedEvent | None = None

    @property
    def closed_by(self) -> str | None:
        """How it ended: the closing event's type."""
        return self.closer.type if self.closer is not None else None

    @property
    def first_seq(self) -> int:
        return self.events[0].stream_seq

    @property
    def last_seq(self) -> int:
        return self.events[-1].stream_seq


def finished_subjects(stream_events: Sequence[RecordedEvent], kind: str) -> list[Subject]:
    """Every subject of `kind` that is closed within this prefix of one stream."""
    return [subject for _, subject in closed_subjects(_ordered(stream_events), kind)]


def subjects_closed_by_last(stream_events: Sequence[RecordedEvent], kind: str) -> list[Subject]:
    """The subjects that the last event of this stream prefix closes (zero or one).

    A worker consuming events one by one calls this with the stream read up to the event
    it received; redelivery yields the same subject again, and the reward store's
    (subject, contract version) uniqueness makes that harmless.
    """
    events = _ordered(stream_events)
    if not events:
        return []
    last = events[-1].stream_seq
    return [subject for closer, subject in closed_subjects(events, kind) if closer == last]


def closed_subjects(ordered: Sequence[RecordedEvent], kind: str) -> list[tuple[int, Subject]]:
    """Every subject of `kind` closed within ``ordered`` (one stream's events in seq
    order: the caller's word, not checked), each with the seq of the event that closes
    it: an episode's own last event, a turn's next `turn.user` or episode end."""
    if kind == "episode":
        return _episodes(ordered)
    if kind == "turn":
        return _turns(ordered)
    raise ValueError(f"unknown subject kind {kind!r}")


def _ordered(stream_events: Sequence[RecordedEvent]) -> list[RecordedEvent]:
    events = sorted(stream_events, key=lambda event: event.stream_seq)
    if len({event.stream_id for event in events}) > 1:
        raise ValueError("subjects are cut from one stream at a time")
    return events


def _episodes(events: Sequence[RecordedEvent]) -> list[tuple[int, Subject]]:
    subjects, start = [], 0
    for index, event in enumerate(events):
        if event.type in EPISODE_ENDS:
            part = tuple(events[start : index + 1])
            subject_id = f"episode:{event.stream_id}:{event.stream_seq}"
            subjects.append((event.stream_seq, Subject(subject_id, "episode", event.stream_id, part,
                                                       event)))
            start = index + 1
    return subjects


def _turns(events: Sequence[RecordedEvent]) -> list[tuple[int, Subject]]:
    subjects: list[tuple[int, Subject]] = []
    start: int | None = None
    for index, event in enumerate(events):
        if event.type not in _TURN_BOUNDS:
            continue
        if start is not None:
            opener = events[start]
            subject_id = f"turn:{opener.stream_id}:{opener.stream_seq}"
            part = tuple(events[start:index])
            subjects.append((event.stream_seq, Subject(subject_id, "turn", opener.stream_id, part,
                                                       event)))
        start = index if event.type == TURN_USER else None
    return subjects


_TURN_BOUNDS = frozenset({TURN_USER, *EPISODE_ENDS})
