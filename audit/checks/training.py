"""Firings and manifests beyond their projections: the log must agree with itself.

The rows (firings, runs, manifests and their members) are projections, compared by the
projections' check. Here: the content hash a ``trigger.fired`` froze is the one the
manifest's ``dataset.frozen`` recorded (a manifest is reused by later firings of the
same content), and each manifest's examples, rebuilt from its rewards and events, still
hash to what it froze (``audit.sources.rebuild_manifests``).
"""

from __future__ import annotations

from audit.report import Findings
from events.model import RecordedEvent
from trainer.datasets.events import DatasetFrozen
from trainer.triggers.events import TriggerFired

FROZEN, FIRED = DatasetFrozen.TYPE, TriggerFired.TYPE


def check_frozen_hashes(findings: Findings, frozen: list[RecordedEvent], fired: list[RecordedEvent]) -> None:
    recorded = {e.payload["manifest_id"]: e for e in frozen}
    for event in fired:
        findings.checked += 1
        p = event.payload
        made = recorded.get(p["manifest_id"])
        subject = f"trigger_firings firing_id={p['firing_id']}"
        if made is None:
            findings.add(subject, f"trigger.fired at position {event.position} names manifest "
                                  f"{p['manifest_id']}, which no dataset.frozen event recorded")
        elif made.payload["content_hash"] != p["manifest_hash"]:
            findings.add(subject, f"trigger.fired at position {event.position} froze content hash "
                                  f"{p['manifest_hash'][:12]}…, dataset.frozen at position {made.position} "
                                  f"recorded {made.payload['content_hash'][:12]}…")
