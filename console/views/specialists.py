"""Specialists: their aliases now, the alias timeline (rollbacks marked: a move records its
kind) and their versions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from console.views.serves import Serves, serves
from hcp.bootstrap import Container
from trainer.registry.model import AdapterStatus, AdapterVersion, AliasMove, Specialist

PAGE = 50


@dataclass(frozen=True)
class TimelineRow:
    """One alias move as the timeline shows it."""

    move: AliasMove
    rollback: bool
    until: datetime | None  # when the next move of the same alias replaced it (None: still)


class ServingView(TypedDict):
    """The contract versions serving a specialist: this server's, and other servers'."""

    used: str  # the contract this server serves under (HCP_SERVING_CONTRACT)
    here: str | None
    others: list[str]


class SpecialistRow(TypedDict):
    specialist: Specialist
    aliases: dict[str, AliasMove]  # where each alias points now
    serving: ServingView | None
    serves: Serves


class Period(TypedDict):
    """An alias pointing at one version, from ``since`` until ``until`` (None: still)."""

    adapter_id: str | None
    since: datetime
    until: datetime | None
    actor: str
    reason: str


class AliasChoice(TypedDict):
    adapter_id: str
    status: AdapterStatus


def overview(container: Container) -> list[SpecialistRow]:
    """Every specialist with the adapters its aliases point to now, and the contract
    versions serving it (where the server records which version serves which specialist)."""
    serving = serving_contracts(container)
    return [{"specialist": s, "aliases": container.aliases.current(s.name),
             "serving": serving_of(serving, s.name, container.settings.serving_contract),
             "serves": serves(container, s.name)}
            for s in container.registry.specialists()]


def serving_contracts(container: Container, at: datetime | None = None) -> dict[str, list[str]] | None:
    """Specialist -> the ``name@version`` serving it (now, or at ``at``), per contract; None
    when the server does not record serving versions (a ``serving`` service with ``current``)."""
    current = getattr(getattr(container, "serving", None), "current", None)
    if current is None:
        return None
    found: dict[str, list[str]] = {}
    for name in sorted({v.name for v in container.contracts.versions()}):
        for specialist, move in current(name, at).items():
            found.setdefault(specialist, []).append(move.ref)
    return found


def serving_of(serving: dict[str, list[str]] | None, specialist: str,
               used: str) -> ServingView | None:
    """The versions serving ``specialist``: ``here``, the one of the contract this server
    serves under (``used``, HCP_SERVING_CONTRACT), and the ``others`` (other servers')."""
    if serving is None:
        return None
    refs = serving.get(specialist, [])
    here = next((ref for ref in refs if ref.split("@")[0] == used), None)
    return {"used": used, "here": here, "others": [ref for ref in refs if ref != here]}


def specialist_page(container: Container, name: str, before_move: int | None = None,
                    before_version: int | None = None) -> dict[str, Any]:
    specialist = container.registry.specialist(name)
    moves = container.aliases.history(name, None, PAGE + 1, before_move)
    ids = container.registry.adapter_ids(name, PAGE + 1, before_version)
    found = container.registry.versions(ids)  # a few batched reads, not three per version
    adapters = [found[i] for i in ids if i in found]
    shown = moves[:PAGE]
    serving = serving_contracts(container)
    return {
        "specialist": specialist,
        "serving": serving_of(serving, name, container.settings.serving_contract),
        "serves": serves(container, name),
        "aliases": container.aliases.current(name),
        "timeline": timeline(moves)[:PAGE],
        "periods": periods(shown),
        "older_moves": shown[-1].position if len(moves) > PAGE else None,
        "adapters": adapters[:PAGE],
        "older_adapters": adapters[PAGE - 1].version if len(adapters) > PAGE else None,
        "choices": choices(adapters[:PAGE]),
    }


def timeline(moves: list[AliasMove]) -> list[TimelineRow]:
    """Newest first, as stored; each move knows whether it was a rollback and when it was
    superseded (from the moves given: a page's oldest may not know)."""
    rows: list[TimelineRow] = []
    newer: dict[str, AliasMove] = {}  # per alias, the move after this one
    for move in moves:
        successor = newer.get(move.alias)
        rows.append(TimelineRow(move, move.kind == "rollback",
                                successor.moved_at if successor else None))
        newer[move.alias] = move
    return rows


def periods(moves: list[AliasMove]) -> dict[str, list[Period]]:
    """Per alias, oldest first: which version it pointed to from when until when."""
    found: dict[str, list[Period]] = {}
    for move in sorted(moves, key=lambda m: m.position):
        spans = found.setdefault(move.alias, [])
        if spans:
            spans[-1]["until"] = move.moved_at
        spans.append({"adapter_id": move.adapter_id, "since": move.moved_at, "until": None,
                      "actor": move.actor, "reason": move.reason})
    return found


def choices(adapters: list[AdapterVersion]) -> list[AliasChoice]:
    """What an alias can be moved to: the listed versions, rejected ones marked."""
    return [{"adapter_id": a.adapter_id, "status": a.status} for a in adapters]
