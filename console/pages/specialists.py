"""Specialists and their aliases; moving an alias (reason, then a confirmation step)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from console.deps import Actor, ContainerDep, Form, Viewer, need
from console.render import console_router, page
from console.views import specialists as views
from kernel.errors import Invalid

router = console_router()
READ, WRITE = "registry:read", "registry:write"


@router.get("/specialists")
def specialists(request: Request, session: Viewer, container: ContainerDep) -> Response:
    need(session, READ)
    return page(request, "specialists.html", {"rows": views.overview(container)}, session)


@router.get("/specialists/{name}")
def specialist(request: Request, name: str, session: Viewer, container: ContainerDep,
               before_move: int | None = None, before_version: int | None = None,
               moved: str | None = None) -> Response:
    need(session, READ)
    context = views.specialist_page(container, name, before_move, before_version)
    return page(request, "specialist.html", {**context, "moved": moved,
                                             "can_move": session.allows(WRITE)}, session)


@router.post("/specialists/{name}/aliases/move")
def move_alias(request: Request, name: str, session: Actor, form: Form,
               container: ContainerDep) -> Response:
    """First post: show what will change and ask to confirm; second (confirm=yes): move."""
    need(session, WRITE)
    alias, target = form.get("alias", "").strip(), form.get("adapter_id", "").strip()
    reason = _reason(form)
    if not alias or not target:
        raise Invalid("alias and adapter_id: choose an alias and the version to point it at")
    if form.get("confirm") != "yes":
        return _confirm(request, session, container, name, alias, target, reason, "move")
    container.aliases.move(name, alias, target, session.actor, reason,
                           form.get("expected_current") or None)
    return _back(name, alias)


@router.post("/specialists/{name}/aliases/{alias}/rollback")
def rollback_alias(request: Request, name: str, alias: str, session: Actor, form: Form,
                   container: ContainerDep) -> Response:
    """Roll the alias back (to where the registry's rollback rule sends it), after
    confirmation; the confirmation names both ends, and a change meanwhile refuses it."""
    need(session, WRITE)
    reason = _reason(form)
    current, target = container.aliases.rollback_target(name, alias)
    if form.get("confirm") != "yes":
        return _confirm(request, session, container, name, alias, target, reason, "rollback")
    if (form.get("expected_current"), form.get("adapter_id")) != (current, target):
        raise Invalid(f"{name}/{alias} changed meanwhile (now {current}, a rollback would go to "
                      f"{target}); look again")
    container.aliases.rollback(name, alias, session.actor, reason)
    return _back(name, alias)


def _reason(form: dict[str, str]) -> str:
    reason = form.get("reason", "").strip()
    if not reason:
        raise Invalid("reason: say why the alias moves (it is recorded in the log)")
    return reason


def _confirm(request: Request, session: Actor, container: ContainerDep, name: str, alias: str,
             target: str, reason: str, kind: str) -> Response:
    current = container.aliases.at(name, alias)
    adapter = container.registry.adapter(target)
    return page(request, "alias_confirm.html", {
        "specialist": name, "alias": alias, "target": adapter, "reason": reason, "kind": kind,
        "current": current.adapter_id if current else None}, session)


def _back(name: str, alias: str) -> Response:
    return RedirectResponse(f"/console/specialists/{quote(name)}?moved={quote(alias)}",
                            status_code=303)
