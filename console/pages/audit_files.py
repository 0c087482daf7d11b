"""Downloads of the audit page: proofs, checkpoints, the public key, OpenLineage and PROV,
and a stored audit run, each a file a third party checks offline (the page says how)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Response

from console.deps import ContainerDep, Viewer, need
from console.render import SECURITY_HEADERS, console_router
from console.views import audit_files as files
from kernel.errors import Invalid

router = console_router()
AUDIT, LINEAGE = "audit:read", "lineage:read"
Position = Annotated[int | None, Query(ge=1)]


def _sent(download: files.Download) -> Response:
    return Response(download.body, media_type=download.media_type, headers={
        **SECURITY_HEADERS, "Content-Disposition": f'attachment; filename="{download.filename}"'})


def _position(text: str, field: str) -> int | None:
    """An optional checkpoint position from a form field (blank: the latest)."""
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise Invalid(f"{field}: a checkpoint position (1, 2, …), or blank for the latest; got {text!r}")
    return int(text)


@router.get("/audit/files/inclusion")
def inclusion(session: Viewer, container: ContainerDep, event_id: str = "",
              checkpoint: str = "") -> Response:
    """The event's inclusion proof in a signed checkpoint (`hcp audit proof`)."""
    need(session, AUDIT)
    return _sent(files.inclusion(container, event_id, _position(checkpoint, "checkpoint")))


@router.get("/audit/files/consistency")
def consistency(session: Viewer, container: ContainerDep, old: str = "", new: str = "") -> Response:
    """That checkpoint ``old``'s log is a prefix of ``new``'s (`hcp audit consistency`)."""
    need(session, AUDIT)
    first = _position(old, "old")
    if first is None:
        raise Invalid("old: the older checkpoint's position")
    return _sent(files.consistency(container, first, _position(new, "new")))


@router.get("/audit/files/checkpoints.json")
def checkpoints(session: Viewer, container: ContainerDep) -> Response:
    """Every signed checkpoint (`hcp audit checkpoint export`)."""
    need(session, AUDIT)
    return _sent(files.checkpoints(container))


@router.get("/audit/files/verifier-key.txt")
def verifier_key(session: Viewer, container: ContainerDep) -> Response:
    """The log's public key (`hcp audit key --pem`): pin it out of band too."""
    need(session, AUDIT)
    return _sent(files.verifier_key(container))


@router.get("/audit/files/openlineage.jsonl")
def openlineage(session: Viewer, container: ContainerDep,
                after: Annotated[int, Query(ge=0)] = 0) -> Response:
    """OpenLineage run events after a log position (`hcp lineage export openlineage --file`)."""
    need(session, LINEAGE)
    return _sent(files.openlineage(container, after))


@router.get("/audit/files/prov")
def prov(session: Viewer, container: ContainerDep, adapter_id: str = "") -> Response:
    """An adapter version's ancestry as PROV-JSON (`hcp lineage adapter --format prov-json`)."""
    need(session, LINEAGE)
    if not adapter_id.strip():
        raise Invalid("adapter_id: the version whose ancestry to export, e.g. coding@3")
    return _sent(files.prov(container, adapter_id.strip()))


@router.get("/audit/runs/{event_id}/event.json")
def audit_run(event_id: str, session: Viewer, container: ContainerDep) -> Response:
    """A stored audit run's event, as the log holds it (its payload is the report)."""
    need(session, AUDIT)
    return _sent(files.audit_run(container, event_id))
