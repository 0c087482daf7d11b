"""The audit page: audit runs kept in the log (started here with progress, or by `hcp audit
all`) and listed; proofs and exports downloaded as files that verify offline with only
the log's public key, as the page says."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from api.app import create_app
from audit.checkpoints import load_checkpoints
from audit.exports.prov import qualified
from audit.keys import SigningKey
from audit.runs import AUDIT_RUNS_STREAM, canonical_sha256
from audit.verify import (
    ConsistencyBundle,
    InclusionBundle,
    verify_consistency_bundle,
    verify_inclusion_bundle,
)
from cli.main import app as cli
from hcp.settings import get_settings
from tests.integration.console_data import ConsoleData, build, record
from tests.integration.test_console import csrf_of, get, sign_in
from tests.unit.trainer_core import fixtures

container, recorder = fixtures.container, fixtures.recorder
KEY = SigningKey.generate("hcp.console-test/log")


@pytest.fixture
def signed(container, tmp_path: Path):
    """The console's container with a checkpoint key (before anything reads it)."""
    key_file = tmp_path / "checkpoint.key"
    key_file.write_text(KEY.skey() + "\n")
    container.settings = container.settings.model_copy(update={"checkpoint_key_file": key_file})
    return container


def over(c, tmp_path: Path) -> tuple[TestClient, ConsoleData]:
    data = build(c, tmp_path)
    return TestClient(create_app(c), follow_redirects=False), data


@pytest.fixture
def console(signed, tmp_path):
    return over(signed, tmp_path)


def download(client, path: str, status: int = 200) -> bytes:
    answer = client.get(path)
    assert answer.status_code == status, f"{path}: {answer.status_code} {answer.text[:300]}"
    if status == 200:
        assert answer.headers["content-disposition"].startswith("attachment; filename=")
    return answer.content


def wait_for_audit(client, fragment: str) -> str:
    job = re.search(r'hx-get="/console/audit/jobs/([^"]+)"', fragment)[1]
    deadline = time.monotonic() + 120
    while 'id="stored-run"' not in fragment:
        assert time.monotonic() < deadline, fragment
        time.sleep(0.3)
        fragment = client.get(f"/console/audit/jobs/{job}", headers={"HX-Request": "true"}).text
    return fragment


def test_an_audit_started_here_runs_with_progress_and_is_kept_as_the_key_s_run(console):
    client, data = console
    c = client.app.state.container
    sign_in(client, data.keys["admin"])
    page = get(client, "/console/audit")
    assert "No audit has run yet" in page
    started = client.post("/console/audit/runs", data={"csrf": csrf_of(page)}, headers={"HX-Request": "true"})
    assert started.status_code == 200 and "Auditing everything" in started.text
    done = wait_for_audit(client, started.text)
    assert "audit ok" in done and "event_log" in done and "<progress" in done

    run = c.audit_runs.latest()[0]
    assert (run.actor, run.result.started_from) == ("key:ops", "console")
    assert (run.result.scope, run.result.ok) == ("all", True)
    listed = get(client, "/console/audit").split('id="audit-runs"', 1)[1].split("</table>", 1)[0]
    assert f"/console/audit/runs/{run.event_id}" in listed and "key:ops" in listed and "console" in listed
    shown = get(client, f"/console/audit/runs/{run.event_id}")
    checks = shown.split('id="run-checks"', 1)[1].split("</table>", 1)[0]
    assert all(f">{check['check']}</th>" in checks for check in run.result.report["checks"])

    event = json.loads(download(client, f"/console/audit/runs/{run.event_id}/event.json"))
    stored = c.store.get_many([run.event_id])[run.event_id]
    assert event["stream_id"] == AUDIT_RUNS_STREAM and event["hash"] == stored.hash
    payload = event["payload"]
    assert payload["report_sha256"] == canonical_sha256(payload["report"])  # nothing was capped
    assert "no audit run" in get(client, f"/console/audit/runs/{data.keys['admin'][:8]}", 404)
    assert "no audit run" in get(client, f"/console/audit/runs/{c.store.read_all(limit=1)[0].event_id}", 404)


def test_hcp_audit_all_keeps_its_run_too(console, monkeypatch):
    client, data = console
    c = client.app.state.container
    monkeypatch.setenv("HCP_DATABASE_URL", c.settings.database_url)
    monkeypatch.setenv("HCP_DATA_DIR", str(c.settings.data_dir))
    monkeypatch.setenv("HCP_CHECKPOINT_KEY_FILE", str(c.settings.checkpoint_key_file))
    monkeypatch.delenv("HCP_KAFKA_BOOTSTRAP", raising=False)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(cli, ["audit", "all", "--json"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    run = c.audit_runs.latest()[0]
    assert run.actor.startswith("cli:") and run.result.started_from == "cli"
    assert run.result.report_sha256 == canonical_sha256(report)  # the copy the auditor kept matches
    sign_in(client, data.keys["auditor"])
    assert run.actor in get(client, "/console/audit").split('id="audit-runs"', 1)[1]


def test_proofs_and_exports_download_and_verify_offline(console, tmp_path):
    client, data = console
    c = client.app.state.container
    verifier = KEY.verifier()
    sign_in(client, data.keys["admin"])
    page = get(client, "/console/audit")
    assert verifier.vkey() in page and "hcp audit prove" in page and "hcp verify --checkpoint" in page
    event = c.store.read_all(limit=1)[0]
    inclusion = f"/console/audit/files/inclusion?event_id={event.event_id}"
    assert "no checkpoint has been signed yet" in get(client, inclusion, 409)

    signed = client.post("/console/audit/checkpoints", data={"csrf": csrf_of(page)})
    assert signed.status_code == 303
    proof = json.loads(download(client, inclusion))
    assert verify_inclusion_bundle(InclusionBundle.from_json(proof), verifier).size == c.store.head()
    (tmp_path / "proof.json").write_bytes(json.dumps(proof).encode())
    proven = CliRunner().invoke(cli, ["audit", "prove", str(tmp_path / "proof.json"),
                                      "--key", verifier.vkey()])
    assert proven.exit_code == 0 and "proven: event" in proven.output  # the command the page names

    record(c, 2, seed=5, adapters={})
    assert client.post("/console/audit/checkpoints", data={"csrf": csrf_of(page)}).status_code == 303
    bundle = json.loads(download(client, "/console/audit/files/consistency?old=1&new=2"))
    old, new = verify_consistency_bundle(ConsistencyBundle.from_json(bundle), verifier)
    assert old.size < new.size
    kept = load_checkpoints(download(client, "/console/audit/files/checkpoints.json"), verifier)
    assert [k.checkpoint.size for k in kept] == [old.size, new.size]
    assert verifier.vkey() in download(client, "/console/audit/files/verifier-key.txt").decode()

    lines = download(client, "/console/audit/files/openlineage.jsonl").decode().splitlines()
    expected = list(c.openlineage.after(0))
    assert len(lines) == len(expected) > 0
    assert [json.loads(line)["run"]["runId"] for line in lines] == [str(e.run.runId) for _, e in expected]
    prov = json.loads(download(client, f"/console/audit/files/prov?adapter_id={data.successor}"))
    assert {qualified("adapter", data.successor), qualified("adapter", data.root)} <= set(prov["entity"])

    assert "not an event id" in get(client, "/console/audit/files/inclusion?event_id=nope", 422)
    assert "checkpoint position" in get(client, "/console/audit/files/consistency?old=x", 422)
    assert "no checkpoint 9" in get(client, "/console/audit/files/consistency?old=1&new=9", 404)

    client.cookies.clear()
    sign_in(client, data.keys["auditor"])  # audit:read, no lineage:read, no audit:write
    page = get(client, "/console/audit")
    assert "need the scope lineage:read" in page and 'id="sign-checkpoint"' not in page
    assert "lineage:read" in get(client, "/console/audit/files/openlineage.jsonl", 403)
    assert download(client, inclusion)


def test_without_a_checkpoint_key_the_page_says_there_is_nothing_signed(container, tmp_path):
    client, data = over(container, tmp_path)
    sign_in(client, data.keys["auditor"])
    assert "This server has no checkpoint key" in get(client, "/console/audit")
    assert "no checkpoint key" in get(client, "/console/audit/files/checkpoints.json", 409)
