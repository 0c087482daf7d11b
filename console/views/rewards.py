"""Rewards: filtered distributions and means, one series or two side by side (two contract
versions, or two adapter versions, under the same other filters), and the records."""

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


def series(params: RewardParams) -> list[tuple[str, RewardFilter]]:
    """One (label, filter) per series: the filter itself, or its two compared variants."""
    base = parse_filter(params)
    if not params.compare:
        return [("selected rewards", base)]
    if params.compare not in COMPARE:
        raise Invalid(f"compare: choose one of {', '.join(COMPARE)}")
    if not params.a or not params.b:
        raise Invalid(f"compare: give two {params.compare} versions to compare (a and b)")
    if params.compare == "adapter":
        return [(ref, replace(base, adapter_version=ref)) for ref in (params.a, params.b)]
    out = []
    for field, ref in (("a", params.a), ("b", params.b)):
        name, version = parse_contract(ref, field)
        out.append((ref, replace(base, contract_name=name, contract_version=version)))
    return out


def rewards_page(container: Container, params: RewardParams) -> dict[str, Any]:
    if not 1 <= params.sample <= MAX_SAMPLE:
        raise Invalid(f"sample: between 1 and {MAX_SAMPLE}")
    names = criteria_names(container)
    figures = [(label, where, container.reward_stats.distribution(where, names, params.sample))
               for label, where in series(params)]
    records = container.reward_stats.latest(figures[0][1], params.before, LIST_PAGE + 1)
    return {
        "params": params,
        "series": [{"label": label, "distribution": d} for label, _, d in figures],
        "chart": bar_chart(f"distribution of {params.criterion or 'the score'}",
                           [{"label": label, "data": list(d.histogram)} for label, _, d in figures]),
        "means": means_table(names, [d for _, _, d in figures]),
        "records": records[:LIST_PAGE],
        "older": records[LIST_PAGE - 1].position if len(records) > LIST_PAGE else None,
        "choices": choices(container, names),
    }


def means_table(names: list[str], figures: list[Distribution]) -> list[dict[str, Any]]:
    """Rows (score, then each criterion) of means per series, and b - a when two."""
    rows: list[tuple[str, list[float | None]]] = [("score", [d.mean for d in figures])]
    rows += [(n, [d.criteria_means.get(n) for d in figures]) for n in names]
    return [{"name": name, "means": means, "delta": _delta(means)} for name, means in rows]


def _delta(means: list[float | None]) -> float | None:
    if len(means) != 2 or means[0] is None or means[1] is None:
        return None
    return means[1] - means[0]


def criteria_names(container: Container) -> list[str]:
    """Every criterion id any contract version defines."""
    documents = [readable(v) for v in container.contracts.versions()]
    return sorted({c.id for d in documents if d is not None for c in d.evaluation.criteria})


def choices(container: Container, criteria: list[str]) -> dict[str, list[str]]:
    """What the filter form offers (the adapter field also takes any text)."""
    return {"specialists": [s.name for s in container.registry.specialists()],
            "contracts": [v.ref for v in container.contracts.versions() if v.status != "draft"],
            "adapters": container.registry.adapter_ids(limit=200),
            "criteria": criteria}
