"""The JSON of `hcp demo`'s reports as their readers take them by key: ``demo-report.json``
(``demo_report.finish_report``; read again by the chart and by ``hcp demo --seeds``) and
``seeds-report.json`` (``demo_seeds.summarise``). Types only; key order is the writers'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from trainer.gate.shapes import Means
from trainer.gate.stats import IntervalJson


class ProbeRow(TypedDict):
    """One probe set of a generation's gate (``demo_report.probe_rows``)."""

    delta: float
    high: float
    low: float
    ok: bool
    n: int
    credit: Means
    pass_rate: Means
    lower: float | None
    power: float | None
    pass_if_equal: float | None
    margin: float | None


class GenerationRow(TypedDict):
    """``demo_report.Generation``, as the report stores it."""

    generation: int
    specialist: str
    version: int
    adapter_id: str
    parent: str
    contract_version: int
    examples: int
    parent_reward: float
    successor_reward: float
    interval: IntervalJson | None
    promoted: bool
    reason: str
    seconds: float
    train_tokens_per_s: float
    parent_pass_rate: float | None
    successor_pass_rate: float | None
    probes: dict[str, ProbeRow]
    objective: str
    init: str
    kl_from_base: float | None
    answers_sampled: int


class ProbeSeries(TypedDict):
    """A probe set's credit and pass rate of the production adapter, generation 0 first."""

    n: int
    credit_by_generation: list[float]
    pass_rate_by_generation: list[float]


class GroupGain(TypedDict):
    """Held-out reward and pass rate of a template group: the base against the last production."""

    n: int
    base_reward: float | None
    last_reward: float | None
    base_pass_rate: float | None
    last_pass_rate: float | None


class SuccessorOnEvaluation(TypedDict):
    generation: int
    adapter: str
    promoted: bool
    pass_rate: float
    credit: float


class EvaluationGroup(TypedDict):
    n: int
    base: float
    last: float
    gain: float


class Evaluation(TypedDict, total=False):
    """The evaluation set no gate saw (``demo_eval.evaluate``; empty without tasks)."""

    n: int
    adapters: list[str]
    successors: list[SuccessorOnEvaluation]
    pass_rate_by_generation: list[float]
    credit_by_generation: list[float]
    passes_by_generation: list[list[int]]  # per task, in task order
    by_group: dict[str, EvaluationGroup]


class SpecialistReport(TypedDict, total=False):
    """A specialist's generations judged under the final contract (``demo_report.rejudge``;
    empty where it trained no version)."""

    production_by_generation: list[float]
    pass_rate_by_generation: list[float | None]
    candidate_by_generation: list[float]
    probes_by_generation: dict[str, ProbeSeries]
    by_group: dict[str, GroupGain]
    last_vs_base: IntervalJson
    n: int
    contract: str
    evaluation: Evaluation


class DemoConfigJson(TypedDict):
    """``demo_state.DemoConfig`` as a report stores it (``out_dir`` a string; the seeds'
    summary has no one seed)."""

    model: str
    specialists: Sequence[str]
    generations: int
    train_tasks: int
    held_out: int
    eval_tasks: int
    k: int
    temperature: float
    seed: int | None
    v2_after: int
    min_examples: int
    sample_budget: int
    objective: str | None
    out_dir: str
    device: str | None


class DemoReport(TypedDict):
    """``demo-report.json``."""

    model: str
    config: DemoConfigJson
    v2_after: int
    generations: list[GenerationRow]
    specialists: dict[str, SpecialistReport]
    timings_s: dict[str, float]
    # the machine and the libraries (``demo_env.environment``): shown, never read back
    environment: Mapping[str, object]
    chain_intact: bool
    events: int


class Spread(TypedDict):
    """A figure across seeds."""

    mean: float
    sd: float
    min: float
    max: float
    n: int


class MeasureSpread(TypedDict):
    by_generation: list[Spread]
    step: list[Spread]  # gain over the generation before
    vs_base: list[Spread]


class Compounding(TypedDict):
    """Generation g against g - 1 on the evaluation set (``demo_compound.compounding``)."""

    generation: int
    versus: int
    n_tasks: int
    seeds: int
    mean: float
    interval: IntervalJson
    per_seed: list[float]
    above_zero: bool


class Loss(TypedDict):
    """A probe set's credit changes across seeds (``demo_compound.losses``)."""

    step_by_seed: list[list[float]]
    versus_base_by_seed: list[list[float]]
    worst_step: float
    worst_versus_base: float
    beyond_margin: bool
    margin: float


class SeedsSpecialist(TypedDict):
    measures: dict[str, MeasureSpread]
    promoted_by_generation: list[int]
    compounding: list[Compounding]
    losses: dict[str, Loss]


class SeedsSummary(TypedDict):
    """``seeds-report.json``."""

    seeds: list[int | None]
    failed_seeds: list[int]
    config: DemoConfigJson
    model: str
    specialists: dict[str, SeedsSpecialist]
    seconds_by_seed: dict[int, float]
    environment: Mapping[str, object]
