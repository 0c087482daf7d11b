"""The router: which specialist answers a user message, under the contract's settings.

The contract's ``[harness.router]`` and each slot's ``keywords`` and ``priority`` decide.
A specialist's score is its share of the keyword hits in the message (a keyword counts
once, matched on word boundaries, case-insensitive); the best score wins, ties go to the
higher ``priority``, then to the name. No hit, or a best score below ``min_confidence``,
falls back to ``default_specialist``. ``fixed`` always routes to the default. The
learned router (``harness.routing``) serves the chat gateway; here, and there until a
version is promoted, ``learned`` routes by the same keyword scores: the scores are
recorded in ``route.decided`` either way, so an evaluator can see how sure the router
was.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from contract.sections import Harness


@dataclass(frozen=True)
class Route:
    specialist: str
    scores: dict[str, float]  # share of keyword hits per specialist (empty: no hit)
    fallback: bool  # the default specialist was used because nothing was confident enough


@cache
def _pattern(keyword: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(keyword.lower())}(?!\w)")


def route(harness: Harness, text: str) -> Route:
    """The specialist the contract's router sends ``text`` to."""
    default = harness.router.default_specialist
    if harness.router.strategy == "fixed":
        return Route(default, {}, True)
    lowered = text.lower()
    hits = {name: sum(1 for k in slot.keywords if _pattern(k).search(lowered))
            for name, slot in harness.specialists.items()}
    total = sum(hits.values())
    if total == 0:
        return Route(default, {}, True)
    scores = {name: count / total for name, count in sorted(hits.items()) if count}
    best = max(scores, key=lambda n: (scores[n], harness.specialists[n].priority, n))
    if scores[best] < harness.router.min_confidence:
        return Route(default, scores, True)
    return Route(best, scores, False)
