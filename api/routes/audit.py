"""Audit routes: verify the hash chain of the whole log."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import AuditRead, EventsRead, StoreDep
from api.schemas import VerifyOut
from events.catalogue import catalogue_document

router = APIRouter(prefix="/v1", tags=["audit"])


@router.get("/audit/verify", response_model=VerifyOut)
def verify_log(store: StoreDep, principal: AuditRead) -> VerifyOut:
    """Re-check every event's digest and chain hash; name the first broken position."""
    report = store.verify()
    brk = report.first_break
    return VerifyOut(intact=report.intact, checked=report.checked,
                     last_position=report.last_position,
                     first_break_position=brk.position if brk else None,
                     reason=brk.reason if brk else None)


@router.get("/catalogue")
def event_catalogue(principal: EventsRead) -> list[dict]:
    """The known event types with the JSON Schema of each payload version."""
    return catalogue_document()
