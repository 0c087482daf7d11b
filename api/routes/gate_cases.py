"""The gate record's cases, page by page: each held-out subject and the answers the
successor and its parent generated for it, with their rewards.

They are every tenant's held-out experience and what the models said to it, so only an
operator key with ``events:read`` (and ``registry:read``) reads them; the adapter's own
route shows the record's summary to every registry reader (``api.visibility``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.deps import GateCasesRead, RegistryDep
from api.jsonbody import StrictJsonRoute
from api.responses import errors
from api.schemas.registry import GateCasesOut
from trainer.gate.record import gate_cases

router = APIRouter(tags=["registry"], route_class=StrictJsonRoute)  # mounted under /v1 by registry


@router.get("/adapters/{adapter_id}/gate/samples", response_model=GateCasesOut,
            responses=errors(404))
def gate_samples(adapter_id: str, registry: RegistryDep, _: GateCasesRead,
                 after: Annotated[int | None, Query(ge=0, le=2**31 - 1,
                                                    description="Index of the last case seen")] = None,
                 limit: Annotated[int, Query(ge=1, le=100)] = 20) -> dict[str, Any]:
    """The gate's judged cases in order (none for an offline gate): subject, and each side's
    answer and reward; operators with events:read only."""
    gate = registry.adapter(adapter_id).metrics.get("gate")
    return {"adapter_id": adapter_id, **gate_cases(gate if isinstance(gate, dict) else {}, after, limit)}
