"""Compare the rewards two contract versions stored for the same subjects."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from api.deps import CompareRead, ComparisonsDep
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from api.visibility import errors_json
from evaluators.dryrun import MAX_SUBJECTS

router = APIRouter(prefix="/v1/contracts", tags=["contracts"], route_class=StrictJsonRoute,
                   responses=SECURED)


class VersionOut(BaseModel):
    name: str
    version: int
    status: str
    content_hash: str


class MoverOut(BaseModel):
    subject_id: str
    baseline: float
    draft: float
    delta: float


class ReportOut(BaseModel):
    count: int = Field(description="Rewards of b compared")
    applicable: int
    scored: int
    errors: int = Field(description="Rewards of b with errors")
    baseline_errors: int
    error_rate: float
    mean: float | None = Field(description="Mean score under b")
    baseline_mean: float | None = Field(description="Mean score under a")
    compared: int = Field(description="Subjects scored under both")
    mean_delta: float | None = Field(description="Mean (b - a) over the compared subjects")
    histogram: list[int]
    baseline_histogram: list[int]
    became_eligible: int
    became_ineligible: int
    largest_movers: list[MoverOut]
    error_samples: list[dict[str, Any]]
    criteria: dict[str, dict[str, Any]] = Field(description="Per criterion: means, delta, errors")
    specialists: dict[str, dict[str, Any]] = Field(description="Per specialist: counts, means, delta")


class ComparisonOut(BaseModel):
    source: str
    a: VersionOut
    b: VersionOut
    subjects: int
    report: ReportOut


@router.get("/{name}/compare", response_model=ComparisonOut, responses=errors(404))
def compare(name: str, comparisons: ComparisonsDep, principal: CompareRead,
            a: Annotated[int, Query(ge=1, le=2**31 - 1, description="The older version (baseline)")],
            b: Annotated[int, Query(ge=1, le=2**31 - 1, description="Whose latest rewards are compared")],
            last: Annotated[int, Query(ge=1, le=MAX_SUBJECTS)] = 500,
            top: Annotated[int, Query(ge=0, le=100)] = 10,
            other: Annotated[str | None, Query(description="Contract of version a, if another")] = None,
            ) -> dict[str, Any]:
    """The stored rewards of ``b`` on its latest subjects (the key's tenant's) against
    ``a``'s on the same ones, overall, per criterion and per specialist; nothing is
    re-scored. Error samples quote event text only to keys with events:read."""
    body = comparisons.compare(name, a, b, last, top, other, principal.tenant).to_json()
    report = body["report"]
    report["error_samples"] = errors_json(report["error_samples"], principal)
    return body
