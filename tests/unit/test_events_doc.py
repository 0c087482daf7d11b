"""docs/events.md's worked example of the hash chain is what the server computes, and its
few lines of plain Python recompute it."""

from __future__ import annotations

import json
import re
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from events.chain import GENESIS_HASH, chain_hash, payload_digest, reference_chain_hash
from events.model import EventMetadata, RecordedEvent

DOC = (Path(__file__).resolve().parents[2] / "docs" / "events.md").read_text()


def example() -> dict:
    return json.loads(re.search(r"```json\n(.*?)```", DOC, re.DOTALL)[1])  # type: ignore[index]


def test_the_example_event_is_chained_as_the_server_chains_it() -> None:
    wire = example()
    meta = wire["metadata"]
    event = RecordedEvent(
        event_id=uuid.UUID(wire["event_id"]), stream_id=wire["stream_id"],
        stream_seq=wire["stream_seq"], position=wire["position"], type=wire["type"],
        schema_version=wire["schema_version"], payload=wire["payload"],
        metadata=EventMetadata(occurred_at=datetime.fromisoformat(meta["occurred_at"]),
                               actor=meta["actor"], tenant=meta["tenant"],
                               specialist=meta["specialist"], adapter_version=meta["adapter_version"]),
        recorded_at=datetime.fromisoformat(meta["recorded_at"]),
        payload_digest=wire["payload_digest"], prev_hash=wire["prev_hash"], hash=wire["hash"])
    assert wire["prev_hash"] == GENESIS_HASH
    assert payload_digest(wire["payload"]) == wire["payload_digest"]
    assert chain_hash(GENESIS_HASH, event) == reference_chain_hash(GENESIS_HASH, event) == wire["hash"]
    assert event.to_json() == wire  # the wire form shown is the served one


def test_the_readers_lines_recompute_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = re.search(r"```python\n(.*?)```", DOC, re.DOTALL)[1]  # type: ignore[index]
    (tmp_path / "event.json").write_text(json.dumps(example()))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/events.md", "exec"), {})  # the doc's own asserts are the check
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
