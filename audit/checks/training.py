"""Firings and manifests beyond their projections: the log must agree with itself.

The rows (firings, runs, manifests and their members) are projections, compared by the
projections' check. Here: the content hash a ``trigger.fired`` froze is the one the
manifest's ``dataset.frozen`` recorded (a manifest is reused by later firings of the
same content), and each manifest's examples, rebuilt from its rewards and events, still
hash to what it froze (``audit.manifests``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from audit.report import Findings
from events.model import RecordedEvent
from trainer.datasets.events import DatasetFrozen
from trainer.datasets.manifest import Manifest
from trainer.runs.events import TrainingQueued, TrainingSucceeded
from trainer.runs.selection import selection_of
from trainer.triggers.events import TriggerFired

FROZEN, FIRED = DatasetFrozen.TYPE, TriggerFired.TYPE
QUEUED, SUCCEEDED = TrainingQueued.TYPE, TrainingSucceeded.TYPE


def frozen_hashes(frozen: Iterable[RecordedEvent]) -> dict[str, tuple[int, str]]:
    """Each manifest's dataset.frozen: its position and content hash (only these: the
    events' reward id lists are long)."""
    return {e.payload["manifest_id"]: (e.position, e.payload["content_hash"]) for e in frozen}


def check_frozen_hashes(findings: Findings, recorded: Mapping[str, tuple[int, str]],
                        fired: Iterable[RecordedEvent]) -> None:
    """Each trigger.fired's manifest hash against what its dataset.frozen (``frozen_hashes``)
    recorded."""
    for event in fired:
        findings.checked += 1
        p = event.payload
        made = recorded.get(p["manifest_id"])
        subject = f"trigger_firings firing_id={p['firing_id']}"
        if made is None:
            findings.add(subject, f"trigger.fired at position {event.position} names manifest "
                                  f"{p['manifest_id']}, which no dataset.frozen event recorded")
        elif made[1] != p["manifest_hash"]:
            findings.add(subject, f"trigger.fired at position {event.position} froze content hash "
                                  f"{p['manifest_hash'][:12]}…, dataset.frozen at position {made[0]} "
                                  f"recorded {made[1][:12]}…")


def check_selections(findings: Findings, events: list[RecordedEvent],
                     manifest: Callable[[str], Manifest | str]) -> None:
    """Each success that recorded its training examples (``training.succeeded`` v2) against
    what its hyper-parameters select from its manifest (``manifest``: rebuilt from the log
    and the reward chain, or why it cannot be): the same reward ids in the same order, and
    their digest. ``events``: the runs' ``training.queued`` and ``training.succeeded``."""
    queued = {e.payload["run_id"]: e.payload for e in events if e.type == QUEUED}
    for event in events:
        p = event.payload
        if event.type != SUCCEEDED or p.get("examples") is None:
            continue
        findings.checked += 1
        subject, run = f"training_runs run_id={p['run_id']}", queued.get(p["run_id"])
        if run is None:
            findings.add(subject, f"training.succeeded at position {event.position} has no training.queued")
            continue
        rebuilt = manifest(run["manifest_id"])
        if isinstance(rebuilt, str):
            findings.add(subject, f"its manifest cannot be rebuilt, so its examples cannot be: {rebuilt}")
            continue
        derived = selection_of(rebuilt, run["hyper"])
        if derived.reward_ids != p["examples"]:
            findings.add(subject, f"training.succeeded at position {event.position} records "
                                  f"{len(p['examples'])} examples; its hyper-parameters pick "
                                  f"{len(derived.reward_ids)} others from its manifest")
        elif derived.examples_sha256 != p.get("examples_sha256"):
            recorded = str(p.get("examples_sha256"))[:12]
            findings.add(subject, f"its {len(p['examples'])} examples hash to "
                                  f"{derived.examples_sha256[:12]}…, not the {recorded}… it recorded")
