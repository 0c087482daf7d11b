"""Lineage exports and the `hcp lineage` commands, on SQLite and PostgreSQL: OpenLineage run
events through the file, HTTP and Kafka transports (validated against the pinned JSON
Schemas), W3C PROV-JSON read back with ``prov``, and the tree and JSON views."""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prov.model import ProvDocument
from typer.testing import CliRunner

from audit.exports.emit import client_for, export
from cli.main import app
from hcp.settings import get_settings
from tests.integration.lineage_scenario import build
from tests.integration.openlineage_schema import validate
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.factories import HOUSE_CONTRACT

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


@pytest.fixture
def history(parts, tmp_path, database_url, monkeypatch):
    """The scenario, a contract published and retired, and one failed run; the CLI's
    settings point at the same database."""
    scenario = build(parts, tmp_path)
    parts.contracts.create_draft("house", HOUSE_CONTRACT, "carol")
    parts.contracts.publish("house", 1, "carol")
    parts.contracts.retire("house", 1, "carol", "superseded")
    failing = parts.triggers.fire_manual("coding", "dave", "again from the base", parent="root").run_id
    assert parts.runs.claim(failing, "w9", 60, 3).outcome == "claimed"
    assert parts.runs.fail(failing, "out of memory", "w9")
    monkeypatch.setenv("HCP_DATABASE_URL", database_url)
    monkeypatch.setenv("HCP_KAFKA_BOOTSTRAP", "")
    monkeypatch.setenv("HCP_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    yield scenario
    get_settings.cache_clear()


def hcp(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout


def kinds(events: list[dict]) -> Counter:
    return Counter((e["run"]["facets"]["hcp"]["kind"], e["eventType"]) for e in events)


EXPECTED = Counter({("manifest_freeze", "START"): 3, ("manifest_freeze", "COMPLETE"): 3,
                    ("training", "START"): 3, ("training", "COMPLETE"): 2, ("training", "FAIL"): 1,
                    ("evaluation", "START"): 1, ("evaluation", "COMPLETE"): 1,
                    ("promotion", "START"): 2, ("promotion", "COMPLETE"): 2})


def test_openlineage_file_export_is_valid_and_resumes(history, parts, tmp_path):
    target = tmp_path / "ol.jsonl"
    hcp("lineage", "export", "openlineage", "--file", str(target))
    events = [json.loads(line) for line in target.read_text().splitlines()]
    for event in events:
        validate(event)
    assert kinds(events) == EXPECTED
    trained = [e for e in events if e["job"]["name"] == "train.coding" and e["eventType"] == "COMPLETE"]
    outputs = {o["name"]: o["facets"]["version"]["datasetVersion"] for e in trained for o in e["outputs"]}
    assert outputs == {"adapters/coding@1": history.root.artifact_sha256,
                       "adapters/coding@2": history.successor.artifact_sha256}
    successor = next(e for e in trained if e["outputs"][0]["name"] == "adapters/coding@2")
    assert {i["name"] for i in successor["inputs"]} == {
        f"manifests/{history.successor.manifest_id}", "base_models/tiny", "adapters/coding@1"}
    manifest_hash = parts.manifests.row(history.successor.manifest_id).content_hash
    manifest_input = next(i for i in successor["inputs"] if i["name"].startswith("manifests/"))
    assert manifest_input["facets"]["version"]["datasetVersion"] == manifest_hash
    promoted = [e for e in events if e["job"]["name"] == "promote.coding" and e["eventType"] == "COMPLETE"]
    assert [(e["inputs"][0]["name"], e["outputs"][0]["name"],
             e["outputs"][0]["facets"]["version"]["datasetVersion"],
             e["run"]["facets"]["hcp"]["details"]["actor"]) for e in promoted] == [
        ("adapters/coding@1", "aliases/coding/production", "coding@1", "alice"),
        ("adapters/coding@2", "aliases/coding/production", "coding@2", "bob")]
    assert successor["run"]["facets"]["parent"]["job"]["name"] == "freeze_manifest.coding"
    failed = next(e for e in events if e["eventType"] == "FAIL")
    assert failed["run"]["facets"]["errorMessage"]["message"] == "out of memory"
    retired = next(e for e in events if e["job"]["name"] == "evaluate.house" and e["eventType"] == "COMPLETE")
    assert retired["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 0

    hcp("lineage", "export", "openlineage", "--file", str(target))  # nothing new since
    assert len(target.read_text().splitlines()) == len(events)
    parts.contracts.create_draft("house", HOUSE_CONTRACT, "carol")
    parts.contracts.publish("house", 2, "carol")
    hcp("lineage", "export", "openlineage", "--file", str(target))
    added = [json.loads(line) for line in target.read_text().splitlines()[len(events):]]
    assert [(e["job"]["name"], e["eventType"]) for e in added] == [("evaluate.house", "START")]
    # Each sink resumes from its own checkpoint: a second file gets everything.
    other = tmp_path / "other.jsonl"
    hcp("lineage", "export", "openlineage", "--file", str(other))
    assert len(other.read_text().splitlines()) == len(events) + 1


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, dict]] = []

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Collector.received.append((self.headers.get("Authorization", ""), json.loads(body)))
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_openlineage_http_transport_posts_valid_events(history, parts):
    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = client_for({"type": "http", "url": f"http://127.0.0.1:{server.server_port}",
                             "auth": {"type": "api_key", "apiKey": "s3cret"}})
        report = export(parts.openlineage, client, 0)
    finally:
        server.shutdown()
    assert report.sent == sum(EXPECTED.values()) == len(_Collector.received)
    assert {auth for auth, _ in _Collector.received} == {"Bearer s3cret"}
    for _, event in _Collector.received:
        validate(event)


@pytest.mark.kafka
def test_openlineage_kafka_transport_publishes_valid_events(history, parts, kafka_bootstrap):
    pytest.importorskip("confluent_kafka")
    from tests.integration.conftest import read_topic

    topic = f"ol-{uuid.uuid4().hex[:8]}"
    client = client_for({"type": "kafka", "topic": topic,
                         "config": {"bootstrap.servers": kafka_bootstrap}})
    report = export(parts.openlineage, client, 0)
    records = read_topic(kafka_bootstrap, topic, expect=report.sent)
    events = [json.loads(r.value) for r in records]
    assert len(events) == report.sent and kinds(events) == EXPECTED
    for event in events:
        validate(event)


def test_prov_json_of_an_ancestry_reads_back(history):
    document = ProvDocument.deserialize(content=hcp("lineage", "adapter", "coding@2", "--format",
                                                    "prov-json"), format="json")
    relations = [(r.get_type().localpart, {str(k.localpart): str(v) for k, v in r.formal_attributes if v})
                 for r in document.get_records()]
    derived = {(a["generatedEntity"], a["usedEntity"], a.get("activity")) for kind, a in relations
               if kind == "Derivation"}
    run = f"run:{history.successor.training_run_id}"
    assert ("adapter:coding%402", "adapter:coding%401", run) in derived
    assert ("adapter:coding%402", f"manifest:{history.successor.manifest_id}", run) in derived
    assert ("adapter:coding%401", f"manifest:{history.root.manifest_id}",
            f"run:{history.root.training_run_id}") in derived
    used = {(a["activity"], a["entity"]) for kind, a in relations if kind == "Usage"}
    assert {(run, "adapter:coding%401"), (run, "base:tiny")} <= used
    influenced = {(a["influencee"], a["influencer"]) for kind, a in relations if kind == "Influence"}
    assert (f"manifest:{history.root.manifest_id}", "contract:default%401") in influenced
    revision = next(r for r in document.get_records() if r.get_type().localpart == "Derivation"
                    and str(r.formal_attributes[1][1]) == "adapter:coding%401")
    assert "prov:Revision" in {str(v) for _, v in revision.extra_attributes}


def test_the_commands_print_trees_and_json(history):
    tree = hcp("lineage", "adapter", "coding@2")
    assert "coding@2" in tree and "back to coding@1" in tree and "manifest" in tree
    assert json.loads(hcp("lineage", "adapter", "coding@2", "--json"))["root_id"] == "coding@1"
    page = json.loads(hcp("lineage", "adapter", "coding@1", "--records", "--json", "--limit", "3"))
    assert page["total"] == 12 and len(page["records"]) == 3
    lines = hcp("lineage", "adapter", "coding@1", "--records", "--all", "--limit", "5").splitlines()
    assert len(lines) == 12 and json.loads(lines[0])["member"]["split"] == "train"
    assert "verified" in hcp("lineage", "manifest", history.root.manifest_id)
    down = hcp("lineage", "downstream", "--event", history.first[0]["event_ids"][0])
    assert "coding@2" in down and "descendant" in down and "production" in down
    by_contract = json.loads(hcp("lineage", "downstream", "--contract", "default@1", "--json"))
    assert by_contract["rewards"]["count"] == 17
    at = history.moves[0].moved_at.isoformat()
    assert json.loads(hcp("lineage", "as-of", at, "--json"))["aliases"][0]["adapter_id"] == "coding@1"
    hcp("lineage", "adapter", "coding@9", code=3)
    hcp("lineage", "downstream", "--event", "x", "--stream", "y", code=2)
