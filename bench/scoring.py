"""Scoring benchmark, no database: CPU time per subject of `score_subjects` (inputs, CEL,
reward records) on bench/evaluate.py's conversations and contract, held in memory.

    .venv/bin/python bench/scoring.py [--conversations 1000] [--repeats 12]

Prints the best of the repeats (process CPU time, so other load on the machine inflates it
less than wall time). For A/B runs, alternate checkouts: `PYTHONPATH=<checkout> python
<checkout>/bench/scoring.py`.
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import UTC, datetime

from evaluate import CONTRACT, conversation_events  # bench/evaluate.py, beside this script

from contract.document import parse_contract
from contract.evaluate import compile_contract
from contract.subject import Subject, finished_subjects
from evaluators.model import VersionRef
from evaluators.scoring import ScoringVersion, score_subjects
from events.model import RecordedEvent
from kernel.collector import settle_garbage_collector

RECORDED = datetime(2026, 1, 1, tzinfo=UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=12)
    args = parser.parse_args()
    subjects = turns(args.conversations)
    compiled = compile_contract(parse_contract(CONTRACT.format(name="bench", w=1.0)))
    versions = [ScoringVersion(VersionRef("bench", 1, compiled.content_hash), compiled)]
    settle_garbage_collector()  # as `hcp evaluator` does once its worker is built
    score_subjects(subjects[:200], versions)
    best = float("inf")
    for _ in range(args.repeats):
        started = time.process_time()
        score_subjects(subjects, versions)
        best = min(best, time.process_time() - started)
    print(f"scoring: {len(subjects):,} turn subjects, {best / len(subjects) * 1e6:.1f} us CPU each "
          f"(best of {args.repeats})")


def turns(conversations: int) -> list[Subject]:
    """The turn subjects of that many of the bench's conversations, as recorded events."""
    subjects: list[Subject] = []
    position = 0
    for n in range(conversations):
        events = []
        for seq, new in enumerate(conversation_events(n), 1):
            position += 1
            events.append(RecordedEvent(uuid.uuid4(), new.stream_id, seq, position, new.type,
                                        new.schema_version, new.payload, new.metadata, RECORDED,
                                        "0" * 64, "0" * 64, "0" * 64))
        subjects += finished_subjects(events, "turn")
    return subjects


if __name__ == "__main__":
    main()
