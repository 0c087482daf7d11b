"""Rewards: filtered distributions and means, and the records.

A score means something only under the rubric that made it, so every series is one
contract version: with no version chosen, the page shows one series per version (of the
chosen contract, or of every contract) that has matching rewards; side by side compares
two contract versions, or two adapter versions under one contract version. A criterion
a version's rubric does not have is absent from its column, never a 0."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from console.views.charts import bar_chart
from console.views.contracts import readable
from evaluators.stats import Distribution, RewardFilter
from hcp.bootstrap import Container
from kernel.errors import Invalid

DEFAULT_SAMPLE, MAX_SAMPLE = 5_000, 100_000
LIST_PAGE = 50
MAX_VERSION_SERIES = 6  # newest versions with rewards shown at once when none is chosen
COMPARE = ("contract", "adapter")


@dataclass(frozen=True)
class RewardParams:
    """The page's query, as typed (all text: a form sends text)."""

    specialist: str = ""
    adapter: str = ""
    contract: str = ""
    criterion: str = ""
    since: str = ""
    until: str = ""
    compare: str = ""
    a: str = ""
    b: str = ""
    sample: int = DEFAULT_SAMPLE
    before: int | None = None


def parse_filter(params: RewardParams) -> RewardFilter:
    """The filter the params describe; Invalid names the field that cannot be read."""
    name, version = parse_contract(params.contract, "contract") if params.contract else (None, None)
    return RewardFilter(specialist=params.specialist or None, adapter_version=params.adapter or None,
                        contract_name=name, contract_version=version,
                        criterion=params.criterion or None,
                        since=parse_time(params.since, "since"), until=parse_time(params.until, "until"))


def parse_contract(text: str, field: str) -> tuple[str, int | None]:
    name, _, version = text.partition("@")
    if not name or (version and not version.isdigit()):
        raise Invalid(f"{field}: expected NAME or NAME@VERSION, got {text!r}")
    return name, int(version) if version else None


def parse_time(text: str, field: str) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
        # Rewards are compared in UTC: 9999-12-31T23:59:59-14:00 parses but has no UTC form.
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except ValueError:
        raise Invalid(f"{field}: expected a date or date and time (ISO 8601), got {text!r}") from None
    except OverflowError:
        raise Invalid(f"{field}: {text!r} is out of range once converted to UTC (year 1 to 9999)") from None


@dataclass(frozen=True)
class Series:
    label: str
    where: RewardFilter
    criteria: tuple[str, ...]  # the ids its contract version's rubric defines


def series(params: RewardParams, rubrics: dict[str, tuple[str, ...]]) -> list[Series]:
    """One series per contract version: the chosen one, the two compared, or (none chosen)
    one per version of ``rubrics`` (ref -> criterion ids, newest first) that matches."""
    base = parse_filter(params)
    if params.compare and params.compare not in COMPARE:
        raise Invalid(f"compare: choose one of {', '.join(COMPARE)}")
    if params.compare and (not params.a or not params.b):
        raise Invalid(f"compare: give two {params.compare} versions to compare (a and b)")
    if params.compare == "adapter":
        if base.contract_version is None:
            raise Invalid("contract: choose the contract version to compare the adapters under "
                          "(scores of different rubrics are not comparable)")
        return [Series(ref, replace(base, adapter_version=ref), _rubric(rubrics, base))
                for ref in (params.a, params.b)]
    if params.compare == "contract":
        out = []
        for field, ref in (("a", params.a), ("b", params.b)):
            name, version = parse_contract(ref, field)
            if version is None:
                raise Invalid(f"{field}: name a contract version, e.g. {name}@1")
            where = replace(base, contract_name=name, contract_version=version)
            out.append(Series(ref, where, _rubric(rubrics, where)))
        return out
    if base.contract_version is not None:
        return [Series(f"{base.contract_name}@{base.contract_version}", base, _rubric(rubrics, base))]
    out = []
    for ref, criteria in rubrics.items():
        name, version = parse_contract(ref, "contract")
        if base.contract_name in (None, name) and (base.criterion is None or base.criterion in criteria):
            out.append(Series(ref, replace(base, contract_name=name, contract_version=version), criteria))
    return out


def _rubric(rubrics: dict[str, tuple[str, ...]], where: RewardFilter) -> tuple[str, ...]:
    return rubrics.get(f"{where.contract_name}@{where.contract_version}", ())


def rewards_page(container: Container, params: RewardParams) -> dict[str, Any]:
    if not 1 <= params.sample <= MAX_SAMPLE:
        raise Invalid(f"sample: between 1 and {MAX_SAMPLE}")
    rubrics = rubric_criteria(container)
    figures = []
    for one in series(params, rubrics):
        found = container.reward_stats.distribution(one.where, one.criteria, params.sample)
        if found.count or params.compare or one.where == parse_filter(params):
            figures.append((one, found))  # a version with nothing matching is left out
        if not params.compare and len(figures) == MAX_VERSION_SERIES:
            break
    records = container.reward_stats.latest(parse_filter(params) if not params.compare
                                            else figures[0][0].where, params.before, LIST_PAGE + 1)
    names = sorted({c for one, _ in figures for c in one.criteria})
    return {
        "params": params,
        "series": [{"label": one.label, "distribution": d} for one, d in figures],
        "chart": bar_chart(f"distribution of {params.criterion or 'the score'}",
                           [{"label": one.label, "data": list(d.histogram)} for one, d in figures]),
        "means": means_table(names, figures),
        "records": records[:LIST_PAGE],
        "older": records[LIST_PAGE - 1].position if len(records) > LIST_PAGE else None,
        "choices": choices(container, sorted({c for cs in rubrics.values() for c in cs})),
        "more_versions": not params.compare and len(figures) == MAX_VERSION_SERIES,
    }


ABSENT = "absent"  # the version's rubric has no such criterion


def means_table(names: list[str], figures: list[tuple[Series, Distribution]]) -> list[dict[str, Any]]:
    """Rows (score, then each criterion) of means per series, and b - a when two; a cell
    is ``ABSENT`` where that series' rubric does not define the criterion."""
    rows: list[tuple[str, list[float | str | None]]] = [("score", [d.mean for _, d in figures])]
    rows += [(n, [d.criteria_means.get(n) if n in one.criteria else ABSENT for one, d in figures])
             for n in names]
    return [{"name": name, "means": means, "delta": _delta(means)} for name, means in rows]


def _delta(means: list[float | str | None]) -> float | None:
    if len(means) != 2:
        return None
    a, b = means
    if not isinstance(a, float | int) or not isinstance(b, float | int):
        return None
    return b - a


def rubric_criteria(container: Container) -> dict[str, tuple[str, ...]]:
    """Each scoring (published or retired) contract version's criterion ids, newest first."""
    scoring = [v for v in container.contracts.versions() if v.published_at is not None]
    found = {}
    for version in sorted(scoring, key=lambda v: v.published_at.replace(tzinfo=None),  # type: ignore[union-attr]
                          reverse=True):
        document = readable(version)
        if document is not None:
            found[version.ref] = tuple(c.id for c in document.evaluation.criteria)
    return found


def choices(container: Container, criteria: list[str]) -> dict[str, list[str]]:
    """What the filter form offers (the adapter field also takes any text)."""
    return {"specialists": [s.name for s in container.registry.specialists()],
            "contracts": [v.ref for v in container.contracts.versions() if v.status != "draft"],
            "adapters": container.registry.adapter_ids(limit=200),
            "criteria": criteria}
