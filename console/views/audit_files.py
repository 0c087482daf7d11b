"""The files an auditor takes away from the console and checks elsewhere, offline: an
event's inclusion proof, a consistency proof between two checkpoints, every signed
checkpoint, the log's public key, the OpenLineage run events, an ancestry as W3C PROV,
and a stored audit run. Each is what the CLI writes for the same question (`hcp audit
proof`, `consistency`, `checkpoint export`, `key`, `hcp lineage export openlineage`,
`hcp lineage adapter --format prov-json`), so `hcp audit prove` and the other checkers
read them unchanged.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from audit.checkpoints import export_json
from audit.exports.prov import prov_document
from hcp.bootstrap import Container
from kernel.errors import Conflict, Invalid

OPENLINEAGE_LIMIT = 10_000  # run events per download; the file says where to resume


@dataclass(frozen=True)
class Download:
    filename: str
    body: bytes
    media_type: str = "application/json"


def _json(document: Any) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def _safe(text: str) -> str:
    """A file-name fragment: letters, digits, dots, dashes (an adapter id's @ included)."""
    return re.sub(r"[^A-Za-z0-9@._-]", "_", text)[:80]


def inclusion(container: Container, event_id: str, checkpoint: int | None) -> Download:
    try:
        parsed = uuid.UUID(event_id.strip())
    except ValueError:
        raise Invalid(f"event_id: '{event_id}' is not an event id (a UUID)") from None
    answer = container.proofs.inclusion(parsed, checkpoint)
    doc = {"event_id": answer.event_id, "position": answer.position,
           "checkpoint_position": answer.checkpoint_position, **answer.bundle.to_json()}
    return Download(f"inclusion-{parsed}.json", _json(doc))


def consistency(container: Container, old: int, new: int | None) -> Download:
    bundle = container.proofs.consistency(old, new)
    newest = new if new is not None else "latest"
    return Download(f"consistency-{old}-{newest}.json", _json(bundle.to_json()))


def checkpoints(container: Container) -> Download:
    verifier = _verifier(container)
    stored = container.checkpoint_store.all()
    return Download("checkpoints.json", export_json([s.signed for s in stored], verifier).encode())


def verifier_key(container: Container) -> Download:
    verifier = _verifier(container)
    text = f"{verifier.vkey()}\n\n{verifier.public_pem().decode()}"
    return Download("verifier-key.txt", text.encode(), "text/plain; charset=utf-8")


def openlineage(container: Container, after: int) -> Download:
    """Run events (one JSON a line) for the log events after position ``after``."""
    from openlineage.client.serde import Serde

    lines: list[str] = []
    last = after
    for position, run_event in container.openlineage.after(after):
        if len(lines) >= OPENLINEAGE_LIMIT and position != last:
            break  # a log event's run events stay together in one file
        lines.append(Serde.to_json(run_event))
        last = position
    return Download(f"openlineage-after-{after}-to-{last}.jsonl", ("\n".join(lines) + "\n").encode(),
                    "application/x-ndjson")


def prov(container: Container, adapter_id: str) -> Download:
    document = prov_document(container.upstream.of(adapter_id)).serialize(format="json", indent=2)
    return Download(f"prov-{_safe(adapter_id)}.json", str(document).encode())


def audit_run(container: Container, event_id: str) -> Download:
    """The stored run's event as the log holds it (its payload is the report): what its
    hash chain and its inclusion proof are checked against."""
    run = container.audit_runs.get(event_id)  # raises NotFound for anything but a stored run
    event = container.store.get_many([run.event_id], raw=True)[run.event_id]
    return Download(f"audit-run-{run.event_id}.json", _json(event.to_json()))


def _verifier(container: Container) -> Any:
    verifier = container.verifier
    if verifier is None:
        raise Conflict("this server has no checkpoint key (HCP_CHECKPOINT_KEY_FILE): "
                       "it signs no checkpoints, so there is nothing to verify them with")
    return verifier
