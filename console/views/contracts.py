"""Contracts: versions with status and author, a version's document and rubric, the
semantic diff of any two versions, dry-run reports and re-scoring progress."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, TypedDict

from console.views.charts import Dataset, bar_chart
from contract.diff import diff_contracts
from contract.document import ContractDocument, parse_contract
from contract.problems import ContractInvalid
from contract.versions import DRAFT, ContractVersion
from evaluators.dryrun import Selection
from hcp.bootstrap import Container

DRY_RUN_DEFAULT_LAST = 200


@lru_cache(maxsize=256)
def parsed(content_hash: str, document: str) -> ContractDocument:
    """A stored document parsed once per content (parsing compiles every expression)."""
    del content_hash  # the cache key: equal hashes mean equal documents
    return parse_contract(document)


def document_of(version: ContractVersion) -> ContractDocument:
    return parsed(version.content_hash, version.document)


def readable(version: ContractVersion) -> ContractDocument | None:
    """The parsed document, or None for one this code can no longer compile (stored by
    an older release with other rules): pages still show its text."""
    try:
        return document_of(version)
    except ContractInvalid:
        return None


def index(container: Container) -> dict[str, list[ContractVersion]]:
    """Every version, by contract name, newest first."""
    found: dict[str, list[ContractVersion]] = {}
    for version in container.contracts.versions():
        found.setdefault(version.name, []).append(version)
    return {name: versions[::-1] for name, versions in sorted(found.items())}


def version_page(container: Container, name: str, number: int) -> dict[str, Any]:
    version = container.contracts.get(name, number)
    others = [v for v in container.contracts.versions(name) if v.version != number]
    return {
        "version": version,
        "rubric": rubric(parsed_document) if (parsed_document := readable(version)) else None,
        "others": others,
        "history": [e for e in container.contracts.history(name)
                    if e.payload.get("version") == number],
        "jobs": rescoring(container, name, number),
        "is_draft": version.status == DRAFT,
        "reward_count": container.rewards.count(name, number),
    }


class CriterionLine(TypedDict):
    id: str
    weight: float
    share: float  # of the weights' total
    description: str
    expression: str


class GateLine(TypedDict):
    id: str
    description: str
    expression: str


class RubricView(TypedDict):
    subject: str
    aggregation: str
    criteria: list[CriterionLine]
    gates: list[GateLine]
    held_out_fraction: float
    eligible: str
    triggers: list[str]


def rubric(document: ContractDocument) -> RubricView:
    """Criteria with their weights' shares, gates, split and triggers, for reading."""
    evaluation = document.evaluation
    total = sum(c.weight for c in evaluation.criteria)
    return {
        "subject": evaluation.subject, "aggregation": evaluation.aggregation,
        "criteria": [{"id": c.id, "weight": c.weight, "share": c.weight / total,
                      "description": c.description, "expression": c.expression.strip()}
                     for c in evaluation.criteria],
        "gates": [{"id": g.id, "description": g.description, "expression": g.expression.strip()}
                  for g in evaluation.gates],
        "held_out_fraction": evaluation.split.held_out_fraction,
        "eligible": document.training.eligible,
        "triggers": sorted(document.training.triggers),
    }


def diff_page(container: Container, name: str, a: int, b: int) -> dict[str, Any]:
    old, new = container.contracts.get(name, a), container.contracts.get(name, b)
    diff = diff_contracts(document_of(old), document_of(new))
    return {"old": old, "new": new, "changes": [c.to_json() for c in diff.changes],
            "text": diff.render(), "versions": container.contracts.versions(name)}


def rescoring(container: Container, name: str, number: int,
              event_text: bool = False) -> list[dict[str, Any]]:
    """The version's re-evaluation jobs with their progress (0..1); ``event_text``: the
    error's example as stored (it may quote any tenant's events), else without it."""
    jobs = container.reevaluations.jobs(name, number)
    return [{**(job if event_text else job.without_event_text()).to_json(),
             "percent": round(100 * job.progress, 1)} for job in jobs]


def dry_run(container: Container, name: str, number: int, baseline: int | None,
            last: int) -> dict[str, Any]:
    """Score the version over the last ``last`` finished subjects against ``baseline``
    (default: the draft's parent if published, else the latest published). Writes nothing."""
    result = container.dry_runs.run(name, number, Selection(last=last), baseline).to_json()
    report = result["report"]
    datasets: list[Dataset] = [{"label": f"v{number} (this version)", "data": report["histogram"]}]
    if result["baseline"] is not None:
        datasets.insert(0, {"label": f"v{result['baseline']['version']} (baseline)",
                            "data": report["baseline_histogram"]})
    return {**result, "chart": bar_chart("dry-run score distribution", datasets, y_title="subjects"),
            # per criterion and per specialist, where the dry run reports them
            "criteria": _mapping(report.get("criteria")),
            "specialists": _mapping(report.get("specialists"))}


def _mapping(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) and value else None
