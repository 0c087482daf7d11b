"""Audit routes: verify the hash chain of the whole log; the event catalogue."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import AuditRead, EventsRead, StoreDep
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED
from api.schemas.events import CatalogueEntryOut, VerifyOut
from events.catalogue import catalogue_document

router = APIRouter(prefix="/v1", tags=["audit"], route_class=StrictJsonRoute, responses=SECURED)


@router.get("/audit/verify", response_model=VerifyOut)
def verify_log(store: StoreDep, principal: AuditRead) -> VerifyOut:
    """Re-check every event's digest and chain hash; name the first broken position."""
    report = store.verify()
    brk = report.first_break
    return VerifyOut(intact=report.intact, checked=report.checked,
                     last_position=report.last_position,
                     first_break_position=brk.position if brk else None,
                     reason=brk.reason if brk else None)


@router.get("/catalogue", response_model=list[CatalogueEntryOut])
def event_catalogue(principal: EventsRead) -> list[dict[str, Any]]:
    """The known event types with the JSON Schema of each payload version."""
    return catalogue_document()
