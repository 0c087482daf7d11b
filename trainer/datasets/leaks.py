"""The held-out invariant: no adapter's train member is held out by its own gate or by the
gate of any of its ancestors. Pure.

A gate proves something only about subjects the successor never trained on, and a
lineage shares its gates: a successor trained on what its grandparent's gate held out
inherits a weight that saw that gate's answers, so the comparison up the chain is no
longer on unseen data. The trainer checks this before it trains (``trainer.runs.runner``),
the freezer keeps such subjects off the train side (``keep_sides``), and ``hcp audit``
checks every registered version (``audit.checks.heldout``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from contract.split import HELD_OUT, TRAIN
from trainer.datasets.manifest import RewardRow

__all__ = ["HELD_OUT", "TRAIN", "Leak", "Reserved", "Sides", "held_out_leaks", "keep_sides",
           "lineage_leaks"]
SHOWN = 3  # subject ids named in a leak's text


@dataclass(frozen=True)
class Sides:
    """One manifest's subjects: what its run trained on, and what its gate held out."""

    train: frozenset[str] = frozenset()
    held_out: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Reserved:
    """What a lineage already used, so that a new manifest keeps it on the same side:
    subjects its gates held out never train, subjects it trained on never gate."""

    held_out: frozenset[str] = frozenset()
    trained: frozenset[str] = frozenset()

    @staticmethod
    def of(lineage: Iterable[Sides]) -> Reserved:
        sides = list(lineage)
        return Reserved(frozenset().union(*(s.held_out for s in sides)),
                        frozenset().union(*(s.train for s in sides)))


def keep_sides(rewards: Iterable[RewardRow], first_sides: Mapping[str, str],
               reserved: Reserved) -> list[RewardRow]:
    """The rewards a manifest may use, each on its subject's side.

    A subject's side is its first reward's (``first_sides``; under split rule 2 every
    reward of a subject agrees with it, rewards made under rule 1 may not): a reward on
    the other side is left out. So is a train reward whose subject a gate of the lineage
    held out, and a held-out reward whose subject the lineage trained on (``reserved``).
    """
    kept = []
    for row in rewards:
        side = first_sides.get(row.subject_id, row.split)
        if row.split != side:
            continue
        if side == TRAIN and row.subject_id in reserved.held_out:
            continue
        if side == HELD_OUT and row.subject_id in reserved.trained:
            continue
        kept.append(row)
    return kept


@dataclass(frozen=True)
class Leak:
    """``adapter`` trained on ``count`` subjects that the gate of ``held_by`` held out."""

    adapter: str
    held_by: str
    count: int
    examples: tuple[str, ...]

    def text(self) -> str:
        whose = "its own gate" if self.held_by == self.adapter else f"the gate of {self.held_by}"
        return (f"{self.adapter} trained on {self.count} subject(s) held out by {whose} "
                f"(e.g. {', '.join(self.examples)})")


def held_out_leaks(adapter: str, train: frozenset[str],
                   gates: Sequence[tuple[str, frozenset[str]]]) -> list[Leak]:
    """The leaks of one version: ``train`` against each (version, held-out set) of ``gates``
    (its own first, then its ancestors')."""
    found = []
    for held_by, held_out in gates:
        common = sorted(train & held_out)
        if common:
            found.append(Leak(adapter, held_by, len(common), tuple(common[:SHOWN])))
    return found


def lineage_leaks(parents: Mapping[str, str | None], manifests: Mapping[str, str],
                  sides: Mapping[str, Sides]) -> list[Leak]:
    """Every version's leaks. ``parents``: version -> parent (None for a root);
    ``manifests``: version -> its manifest id; ``sides``: manifest id -> its sides."""
    found: list[Leak] = []
    for adapter in sorted(parents):
        chain = _chain(adapter, parents)
        gates = [(a, sides.get(manifests[a], Sides()).held_out) for a in chain if a in manifests]
        own = sides.get(manifests.get(adapter, ""), Sides())
        found += held_out_leaks(adapter, own.train, gates)
    return found


def _chain(adapter: str, parents: Mapping[str, str | None]) -> list[str]:
    """The version, its parent, … its root (a cycle, which the registry cannot hold, stops)."""
    chain: list[str] = []
    current: str | None = adapter
    while current is not None and current not in chain:
        chain.append(current)
        current = parents.get(current)
    return chain
