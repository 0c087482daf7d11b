"""Contract engine micro-benchmark: subjects/s of ``evaluate_subject`` against CEL called
directly with only the variables each expression reads, in the same process.

    .venv/bin/python bench/engine.py [--conversations 600] [--repeats 7]

No database: the subjects are bench/evaluate.py's conversations (three turns with routing,
a tool call and feedback), as recorded events, cut into turn subjects, under its
five-criterion, one-gate contract. Per repeat, alternating which goes first:

* engine: ``evaluate_subject(compiled, input)`` for every subject (applies_to, criteria
  and gates under fuel, deadline and size limits, aggregation, split, eligibility);
* peer: the same expressions compiled by plain ``cel.compile`` from their source, each
  executed with a dict of only the variables it reads, no limits; eligibility with the
  weighted mean of the criteria as its score, its verdict remembered by score and split
  as the engine remembers it (the same memo on both sides);
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
from contract.evaluate import CompiledContract, compile_contract, criterion_weights, evaluate_subject
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
    """Plain CEL on the authors' sources: only the variables each one reads, no limits.

    Like for like with the engine: eligibility reads the score the criteria give (their
    weighted mean, 0 when a gate is false), and where the rule reads nothing but ``score``
    and ``split`` its verdict is remembered by those two, as ``evaluate_subject`` remembers
    it (contract/evaluate.py ``_eligibility``)."""
    weights = criterion_weights(compiled.document)
    total = sum(weights.values())
    criteria = [(cel.compile(e.source), sorted(e.variables), weights[key])
                for key, e in compiled.criteria.items()]
    gates = [(cel.compile(e.source), sorted(e.variables)) for e in compiled.gates.values()]
    when = None if compiled.when is None else (cel.compile(compiled.when.source),
                                               sorted(compiled.when.variables))
    eligible = cel.compile(compiled.eligible.source)
    eligible_reads = sorted(compiled.eligible.variables - {"score", "split"})
    memo: dict[tuple[float, str], object] | None = {} if not eligible_reads else None

    def run(variables: dict[str, Any]) -> None:
        if when is not None and not when[0].execute({n: variables[n] for n in when[1]}):
            return
        weighted = sum(weight * program.execute({n: variables[n] for n in names})
                       for program, names, weight in criteria)
        passed = all([program.execute({n: variables[n] for n in names}) for program, names in gates])
        score = weighted / total if passed else 0.0
        key = (score, "train")
        if memo is not None and key in memo:
            return
        verdict = eligible.execute({"score": score, "split": "train",
                                    **{n: variables[n] for n in eligible_reads}})
        if memo is not None:
            memo[key] = verdict

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
