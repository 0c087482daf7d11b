"""Contract engine micro-benchmark: subjects/s of ``evaluate_subject`` against CEL called
directly with only the variables each expression reads, in the same process.

    .venv/bin/python bench/engine.py [--conversations 600] [--repeats 7]

No database: the subjects are bench/evaluate.py's conversations (three turns with routing,
a tool call and feedback), as recorded events, cut into turn subjects, under its
five-criterion, one-gate contract. Per repeat, alternating which goes first:

* engine: ``evaluate_subject(compiled, input)`` for every subject (applies_to, criteria
  and gates under fuel, deadline and size limits, aggregation, split, eligibility);
* peer: the same expressions compiled by plain ``cel.compile`` from their source, each
  executed with a dict of only the variables it reads (eligibility with the score), no
  limits, no aggregation;
* both again with ``build_input`` (the subject digested into variables) inside the clock;
* rubric: only the ``rubric.evaluate`` calls ``evaluate_subject`` makes (the CEL side with
  its limits), to tell them apart from the scaffolding in contract/evaluate.py.

Figures are medians over repeats; ratios are medians of per-repeat ratios. Goal: engine /
peer >= 0.8.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import cel
from evaluate import CONTRACT, conversation_events  # bench/evaluate.py, beside this script

from contract import rubric
from contract.document import parse_contract
from contract.evaluate import CompiledContract, compile_contract, evaluate_subject
from contract.inputs import build_input
from contract.subject import Subject, finished_subjects
from events.model import RecordedEvent

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def subjects(conversations: int) -> list[Subject]:
    out: list[Subject] = []
    for n in range(conversations):
        events = [
            RecordedEvent(event_id=e.event_id, stream_id=e.stream_id, stream_seq=i + 1,
                          position=i + 1, type=e.type, schema_version=e.schema_version,
                          payload=e.payload, metadata=e.metadata,
                          recorded_at=T0 + timedelta(seconds=i), payload_digest="0" * 64,
                          prev_hash="0" * 64, hash="0" * 64)
            for i, e in enumerate(conversation_events(n))
        ]
        out += finished_subjects(events, "turn")
    return out


def direct_peer(compiled: CompiledContract) -> Callable[[dict[str, Any]], None]:
    """Plain CEL on the authors' sources: only the variables each one reads, no limits."""
    items = [*compiled.criteria.values(), *compiled.gates.values()]
    if compiled.when is not None:
        items.insert(0, compiled.when)
    programs = [(cel.compile(e.source), sorted(e.variables)) for e in items]
    eligible = cel.compile(compiled.eligible.source)
    eligible_reads = sorted(compiled.eligible.variables - {"score"})

    def run(variables: dict[str, Any]) -> None:
        for program, names in programs:
            program.execute({name: variables[name] for name in names})
        eligible.execute({"score": 0.7, **{name: variables[name] for name in eligible_reads}})

    return run


def rubric_calls(compiled: CompiledContract) -> Callable[[dict[str, Any]], None]:
    """The rubric.evaluate calls of one evaluate_subject, without its scaffolding."""
    items = [*compiled.criteria.values(), *compiled.gates.values()]
    if compiled.when is not None:
        items.insert(0, compiled.when)
    result = {"score": 0.7, "components": {}, "gates": {}, "split": "train"}

    def run(variables: dict[str, Any]) -> None:
        for expression in items:
            rubric.evaluate(expression, variables, compiled.limits)
        rubric.evaluate(compiled.eligible, {**variables, **result}, compiled.limits)

    return run


def timed(work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=600)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    doc = parse_contract(CONTRACT.format(name="bench", w=1.0))
    compiled, harness = compile_contract(doc), doc.harness
    subs = subjects(args.conversations)
    inputs = [build_input(s, harness) for s in subs]
    peer, calls = direct_peer(compiled), rubric_calls(compiled)
    cases: dict[str, Callable[[], object]] = {
        "engine": lambda: [evaluate_subject(compiled, i) for i in inputs],
        "peer": lambda: [peer(i) for i in inputs],
        "engine+inputs": lambda: [evaluate_subject(compiled, build_input(s, harness)) for s in subs],
        "peer+inputs": lambda: [peer(build_input(s, harness)) for s in subs],
        "rubric only": lambda: [calls(i) for i in inputs],
    }
    rates: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(args.repeats):
        order = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in order:
            rates[name].append(len(subs) / timed(cases[name]))
    print(f"{len(subs):,} turn subjects, 5 criteria + 1 gate + eligibility, {args.repeats} repeats")
    for ours, theirs in (("engine", "peer"), ("engine+inputs", "peer+inputs"), ("rubric only", "peer")):
        ratio = statistics.median(a / b for a, b in zip(rates[ours], rates[theirs], strict=True))
        print(f"{ours:<14} {statistics.median(rates[ours]):>8,.0f} subjects/s   "
              f"CEL direct {statistics.median(rates[theirs]):>8,.0f}   ratio {ratio:.2f} (goal >= 0.8)")


if __name__ == "__main__":
    main()
