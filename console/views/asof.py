"""What was production at a time: every alias's target, who answered each specialist's
requests (an adapter, or the bare base), the contract versions serving each specialist
and the versions that scored new experience, as of any moment (``hcp lineage as-of``).

Everything is read up to the log position of the last event recorded at or before the
moment (events/cut.py): alias moves, serving moves, publishing and retiring. The log is
append-only, so the answer for a moment that has passed never changes.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from console.views.rewards import parse_time
from console.views.serves import serves
from console.views.specialists import serving_contracts
from hcp.bootstrap import Container
from kernel.clock import utc, utcnow


def as_of_page(container: Container, at_text: str) -> dict[str, Any]:
    moment = parse_time(at_text.strip(), "at") or utcnow()
    state = container.as_of.at(moment)
    specialists = [s.name for s in container.registry.specialists()]
    return {
        "at": state.at, "at_value": _local(state.at), "asked": bool(at_text.strip()),
        "aliases": [{**a.model_dump(), "before": _before(a.moved_at)} for a in state.aliases],
        "serves": [serves(container, name, state.at) for name in specialists],
        "serving": serving_contracts(container, state.at) or {},
        "scoring": state.contracts,
    }


def _before(moment: datetime) -> str:
    """The as-of time a millisecond before a move: the state it replaced (moves made by
    the server can be that close)."""
    return _local(utc(moment) - timedelta(milliseconds=1))


def _local(moment: datetime) -> str:
    """As a datetime-local input holds it, to the millisecond (the time is UTC)."""
    return utc(moment).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
