"""Turn one subject's expression input into an evaluation under one contract version.

Rules, in the order they apply:

1. A subject the contract does not apply to (other subject kind, specialist or event
   types, or `applies_to.when` false) gets `applicable=False` and no score: no reward.
2. Each criterion yields a number in [0, 1]; each gate a bool. Any error there is recorded
   and the score is `None`: an unevaluable subject is neither rewarded nor punished.
3. The score aggregates the criteria (`weighted_mean`, weighted `geometric_mean`, `min`);
   a gate that is false forces it to 0.
4. The held-out split is the subject's own (``contract.split``: a rule on its user text,
   or its id when it has none), the same under every contract and version; the
   document's ``[evaluation.split]`` section no longer decides it.
5. Eligibility is the `training.eligible` expression (it also sees `score`, `components`,
   `gates` and `split`): whether the trainer may use the reward at all. The split says how:
   train-split rewards train successors, held-out rewards only gate them against their
   parent, so the gate's examples are never trained on yet pass the same quality bar.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from contract import rubric
from contract.document import canonical_form, content_hash
from contract.evaluation import Evaluation, made_evaluation
from contract.rubric import CompiledExpression, EvaluationError, Limits
from contract.sections import ContractDocument
from contract.split import split_for, subject_split  # noqa: F401 (split_for: re-exported)
from contract.vocabulary import INPUT_VARIABLES, RESULT_VARIABLES, WHEN_VARIABLES


@dataclass(frozen=True, eq=False)
class CompiledContract:
    """A validated document with every expression compiled once, ready for many subjects."""

    document: ContractDocument
    content_hash: str
    criteria: dict[str, CompiledExpression]
    gates: dict[str, CompiledExpression]
    eligible: CompiledExpression
    when: CompiledExpression | None
    limits: Limits = field(default=rubric.DEFAULT_LIMITS)
    items: CompiledExpression | None = None  # criteria then gates as one program (_run_items)
    reads: frozenset[str] = frozenset(INPUT_VARIABLES)  # the input variables judging reads
    weights: Mapping[str, float] | None = None  # criterion id -> weight (None: read from document)
    # Eligibility by (score, its sign, split), when that is all the expression reads
    # (_eligibility): a cache, so not part of the compiled contract's value or repr.
    eligible_memo: dict[tuple[float, float, str], bool] | None = field(default=None, compare=False,
                                                                        repr=False)

    @property
    def expressions(self) -> list[CompiledExpression]:
        """Every compiled expression of the contract."""
        found = [*self.criteria.values(), *self.gates.values(), self.eligible]
        return found if self.when is None else [self.when, *found]


def compile_contract(doc: ContractDocument, limits: Limits = rubric.DEFAULT_LIMITS) -> CompiledContract:
    """Compile every expression; raises `rubric.ExpressionError` (parse_contract already
    checked them, so this only fails for a document built without `parse_contract`)."""
    ev = doc.evaluation
    when = ev.applies_to.when
    compiled = CompiledContract(
        document=doc,
        content_hash=content_hash(doc),
        criteria={c.id: rubric.compile_expression(c.expression, INPUT_VARIABLES, limits)
                  for c in ev.criteria},
        gates={g.id: rubric.compile_expression(g.expression, INPUT_VARIABLES, limits) for g in ev.gates},
        eligible=rubric.compile_expression(doc.training.eligible, INPUT_VARIABLES + RESULT_VARIABLES, limits),
        when=rubric.compile_expression(when, WHEN_VARIABLES, limits) if when else None,
        limits=limits,
    )
    return _shared_bindings(compiled)


def _shared_bindings(compiled: CompiledContract) -> CompiledContract:
    """The contract's expressions with what they share on one subject: the variables to
    build, the fields of each map variable to convert (the same for every expression,
    so the subject's values are converted once), and the criteria and gates as one
    program."""
    expressions = compiled.expressions
    merged = rubric.merged_field_reads(expressions)
    shapes = {name: fields for name, fields in merged.items() if fields is not None}

    def shaped(expression: CompiledExpression) -> CompiledExpression:
        return replace(expression, projections=shapes)

    criteria = {key: shaped(e) for key, e in compiled.criteria.items()}
    gates = {key: shaped(e) for key, e in compiled.gates.items()}
    read = frozenset().union(*(e.variables for e in expressions)) & frozenset(INPUT_VARIABLES)
    return replace(compiled, criteria=criteria, gates=gates, eligible=shaped(compiled.eligible),
                   when=shaped(compiled.when) if compiled.when else None,
                   items=shaped(rubric.compile_group([*criteria.values(), *gates.values()])),
                   reads=read | ENGINE_READS, weights=criterion_weights(compiled.document),
                   eligible_memo={} if compiled.eligible.variables <= _MEMO_READS
                   and compiled.eligible.read_sites is not None else None)


# What evaluate_subject itself reads from every input, beside the expressions' variables:
# the subject (id, kind), the user text (a split by it), specialists and event types
# (applies_to).
ENGINE_READS = frozenset({"subject", "user_text", "specialists", "counts"})


# Compiled contracts by canonical JSON, for callers that pass a plain document. Bounded
# crudely (cleared when full): there are only a handful of active contract versions.
_COMPILED: dict[str, CompiledContract] = {}
_COMPILED_MAX = 64


def evaluate_subject(
    contract: CompiledContract | ContractDocument, subject_input: Mapping[str, Any]
) -> Evaluation:
    """Evaluate one subject (its `build_input` variables) under one contract version."""
    compiled = contract if isinstance(contract, CompiledContract) else _cached(contract)
    doc = compiled.document
    subject_id = str(subject_input["subject"]["id"])
    split = subject_split(subject_id, str(subject_input.get("user_text") or ""))
    applies = applies_to(compiled, subject_input)
    made = compiled.content_hash
    if isinstance(applies, EvaluationError):
        return made_evaluation(subject_id, made, True, None, {}, {}, False, split, False, (applies,))
    if not applies:
        return made_evaluation(subject_id, made, False, None, {}, {}, False, split, False, ())
    components, gates, errors = _run_items(compiled, subject_input)
    if errors:
        return made_evaluation(subject_id, made, True, None, components, gates, False, split, False, errors)
    gated = not all(gates.values())
    score = 0.0 if gated else aggregate(doc, components, compiled.weights)
    eligible = _eligibility(compiled, subject_input, score, components, gates, split)
    if isinstance(eligible, EvaluationError):
        return made_evaluation(subject_id, made, True, score, components, gates, gated, split, False,
                           (eligible,))
    return made_evaluation(subject_id, made, True, score, components, gates, gated, split, eligible, ())


def _cached(doc: ContractDocument) -> CompiledContract:
    key = canonical_form(doc)
    found = _COMPILED.get(key)
    if found is None:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        found = _COMPILED[key] = compile_contract(doc)
    return found


def applies_to(compiled: CompiledContract, subject_input: Mapping[str, Any]) -> bool | EvaluationError:
    """Whether the contract judges this subject at all."""
    rule = compiled.document.evaluation
    if subject_input["subject"]["kind"] != rule.subject:
        return False
    wanted = rule.applies_to.specialists
    if wanted and not set(subject_input.get("specialists") or ()) & set(wanted):
        return False
    types = rule.applies_to.event_types
    if types and not set(subject_input["counts"]["by_type"]) & set(types):
        return False
    if compiled.when is None:
        return True
    value = rubric.evaluate(compiled.when, subject_input, compiled.limits)
    return rubric.as_bool(value, "applies_to")


def _run_items(
    compiled: CompiledContract, subject_input: Mapping[str, Any]
) -> tuple[dict[str, float], dict[str, bool], tuple[EvaluationError, ...]]:
    """Every criterion and gate; as one program when that gives the same values.

    One execution of ``items`` (the list of criteria and gates) costs about what one
    criterion does, where one by one each pays the call's fixed cost. Its elements are
    the values the expressions have alone: they read the same variables and share
    nothing but the budget, and one expression's fuel and deadline held them all, so
    each alone was within its own. Any error or stop, and they run one by one as ever,
    so every error is reported on its own item exactly as without the group (a group
    stopped by its deadline has cost one expression's deadline more than that alone).
    """
    criteria, gate_ids = compiled.criteria, compiled.gates
    raws: Any = None
    if compiled.items is not None:
        raws = rubric.evaluate(compiled.items, subject_input, compiled.limits)
    if not isinstance(raws, list) or len(raws) != len(criteria) + len(gate_ids):
        raws = [rubric.evaluate(e, subject_input, compiled.limits)
                for e in [*criteria.values(), *gate_ids.values()]]
    components: dict[str, float] = {}
    gates: dict[str, bool] = {}
    errors: list[EvaluationError] = []
    for item_id, raw in zip(criteria, raws):  # noqa: B905 (raws holds the gates too)
        if type(raw) is float and 0.0 <= raw <= 1.0:  # what as_score gives at once
            components[item_id] = raw
        else:
            _record(components, errors, item_id, rubric.as_score(raw, f"criterion:{item_id}"))
    for item_id, raw in zip(gate_ids, raws[len(criteria):], strict=True):
        if raw is True or raw is False:  # what as_bool gives at once
            gates[item_id] = raw
        else:
            _record(gates, errors, item_id, rubric.as_bool(raw, f"gate:{item_id}"))
    return components, gates, tuple(errors) if errors else ()


def _record(into: dict[str, Any], errors: list[EvaluationError], key: str, value: Any) -> None:
    if isinstance(value, EvaluationError):
        errors.append(value)
    else:
        into[key] = value


def criterion_weights(doc: ContractDocument) -> dict[str, float]:
    """Criterion id -> weight, in the document's order."""
    return {c.id: c.weight for c in doc.evaluation.criteria}


def aggregate(doc: ContractDocument, components: Mapping[str, float],
              weights: Mapping[str, float] | None = None) -> float:
    """Combine criterion values into one score in [0, 1] with the document's aggregation.

    ``weights``: ``criterion_weights(doc)``, when the caller has it already (reading it
    from the document again cost a fifth of judging a subject's criteria).
    """
    if weights is None:
        weights = criterion_weights(doc)
    total = sum(weights.values())
    method = doc.evaluation.aggregation
    if method == "min":
        value = min(components.values())
    elif method == "geometric_mean":
        # Weighted geometric mean: one criterion at 0 sinks the whole score, by design.
        if any(components[key] == 0.0 for key in weights):
            return 0.0
        value = math.exp(sum(w * math.log(components[k]) for k, w in weights.items()) / total)
    else:
        value = sum([w * components[k] for k, w in weights.items()]) / total  # (a list: faster)
    return min(1.0, max(0.0, value))  # float rounding only; inputs are already in [0, 1]


def _eligibility(compiled: CompiledContract, subject_input: Mapping[str, Any], score: float,
                 components: dict[str, float], gates: dict[str, bool], split: str) -> bool | EvaluationError:
    """The eligibility expression's verdict; remembered per contract where the expression
    reads nothing but ``score`` and ``split`` (most do: ``score >= 0.6``), loop-free: then
    it is a pure function of those two (run without the meter, so no deadline), and most
    subjects share a few scores. Only verdicts are remembered, never an error."""
    memo = compiled.eligible_memo
    if memo is not None:
        key = (score, math.copysign(1.0, score), split)  # (0.0 and -0.0 are equal keys)
        found = memo.get(key)
        if found is not None:
            return found
    variables = {**subject_input, "score": score, "components": components, "gates": gates, "split": split}
    verdict = rubric.as_bool(rubric.evaluate(compiled.eligible, variables, compiled.limits), "eligibility")
    if memo is not None and type(verdict) is bool:
        if len(memo) >= _MEMO_MAX:
            memo.clear()
        memo[key] = verdict
    return verdict


_MEMO_READS = frozenset({"score", "split"})
_MEMO_MAX = 4096
