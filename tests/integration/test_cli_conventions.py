"""The conventions every `hcp` command keeps (docs/cli.md), on an embedded database made
by `hcp db upgrade` as a new user makes one: exit statuses, errors as JSON under
``--json``, ``--json`` on list and show commands, uncut tables, ``--at``, and what `hcp
verify` says it proved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app
from hcp.settings import get_settings
from kernel.db import make_engine
from tests.integration.superuser import as_superuser, sql

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "contracts" / "harness.toml"
Hcp = Callable[..., Any]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in [n for n in os.environ if n.startswith("HCP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HCP_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    yield tmp_path
    get_settings.cache_clear()


@pytest.fixture
def hcp(data_dir: Path) -> Hcp:
    """``hcp ARGS`` in this process; the result has exit_code, stdout and stderr."""
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(app, list(args))

    assert run("db", "upgrade").exit_code == 0
    assert run("contract", "new", "harness", "--file", str(EXAMPLE)).exit_code == 0
    return run


def real_hcp(data_dir: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a shell runs it (``settings``: HCP_* variables)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATA_DIR": str(data_dir), **settings}
    script = Path(sys.executable).parent / "hcp"
    return subprocess.run([str(script), *args], env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("args", "status", "said"), [
    (["adapters", "show", "coding@9"], 3, "no adapter version 'coding@9'"),
    (["contract", "show", "harness", "7"], 3, "harness@7 does not exist"),
    (["keys", "revoke", "nosuchkey"], 3, "no key 'nosuchkey'"),
    (["alias", "at", "coding", "production", "--at", "soon"], 2, "'soon' is not a time"),
    (["keys", "create", "--scope", "nope"], 2, "unknown scope(s) ['nope']"),
    (["keys", "create", "--scope", "events:read", "--expires-in", "soon"], 2, "is not a duration"),
    (["contract", "edit", "harness", "1", "--file", "/dev/null"], 2, "error:"),
    (["trainer"], 2, "HCP_REDIS_URL is empty"),
    (["no-such-command"], 2, "No such command"),
    (["contract", "publish", "harness", "9"], 3, "harness@9 does not exist"),
])
def test_each_kind_of_failure_has_its_one_exit_status(hcp: Hcp, args: list[str], status: int,
                                                      said: str) -> None:
    result = hcp(*args)
    assert result.exit_code == status, result.output
    assert said in result.stderr and result.stdout == ""


def test_a_refusal_is_4_and_a_failed_check_is_1(hcp: Hcp, data_dir: Path) -> None:
    created = hcp("keys", "create", "--scope", "events:read", "--label", "bot")
    key_id = created.stdout.strip().splitlines()[-1].split("_")[1]
    assert hcp("keys", "revoke", key_id).exit_code == 0
    again = hcp("keys", "revoke", key_id)
    assert again.exit_code == 4 and "was revoked at" in again.stderr

    vkey = hcp("audit", "keygen", "--origin", "test.example/log", "--out", str(data_dir / "k")).stdout
    bundle = data_dir / "forged.json"
    bundle.write_text(json.dumps({"event_hash": "ab" * 32, "leaf_index": 0, "proof": [],
                                  "checkpoint": "not a signed note"}))
    proven = hcp("audit", "prove", str(bundle), "--key", vkey.strip())
    assert proven.exit_code == 1 and "NOT PROVEN" in proven.stdout


def test_errors_under_json_are_one_json_object_on_stderr(data_dir: Path, hcp: Hcp) -> None:
    missing = real_hcp(data_dir, "adapters", "show", "coding@9", "--json")
    assert missing.returncode == 3 and missing.stdout == ""
    assert json.loads(missing.stderr) == {"error": {"code": "not_found",
                                                    "message": "no adapter version 'coding@9'"}}
    usage = real_hcp(data_dir, "alias", "at", "coding", "production", "--at", "soon", "--json")
    assert usage.returncode == 2 and usage.stdout == ""
    assert json.loads(usage.stderr)["error"]["code"] == "usage"
    assert "'soon' is not a time" in json.loads(usage.stderr)["error"]["message"]
    plain = real_hcp(data_dir, "adapters", "show", "coding@9")
    assert plain.returncode == 3 and plain.stderr == "error: no adapter version 'coding@9'\n"

    nowhere = real_hcp(data_dir / "no-such-dir", "contract", "list", "--json")
    assert nowhere.returncode == 2 and nowhere.stdout == ""
    assert json.loads(nowhere.stderr)["error"]["code"] == "database_missing"
    assert not (data_dir / "no-such-dir").exists()


def test_a_database_that_does_not_answer_is_5_not_a_failed_check(data_dir: Path) -> None:
    down = {"HCP_DATABASE_URL": "postgresql+psycopg://hcp:hcp@127.0.0.1:1/hcp"}  # nothing listens
    verified = real_hcp(data_dir, "verify", **down)
    assert verified.returncode == 5 and "the database could not answer" in verified.stderr
    assert "Traceback" not in verified.stderr
    listed = real_hcp(data_dir, "contract", "list", "--json", **down)
    assert listed.returncode == 5 and json.loads(listed.stderr)["error"]["code"] == "unavailable"


def test_a_contract_with_problems_lists_them_all_under_json(hcp: Hcp, data_dir: Path) -> None:
    broken = data_dir / "broken.toml"
    broken.write_text('[contract]\nname = "x"\n')
    result = hcp("contract", "validate", "--file", str(broken), "--json")
    assert result.exit_code == 2 and result.stdout == ""
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "invalid_contract" and len(error["problems"]) >= 1


LISTS = [["contract", "list"], ["contract", "history", "harness"], ["adapters", "list"],
         ["base-models", "list"], ["triggers", "firings"], ["audit", "checkpoint", "list"],
         ["keys", "list"], ["rewards", "list"], ["alias", "requests"], ["train", "status"],
         ["router", "list", "--contract", "harness"], ["webhooks", "list"]]
SHOWS = [["contract", "show", "harness", "1"], ["contract", "serving", "harness"],
         ["contract", "schema"], ["db", "current"], ["verify"], ["lineage", "as-of", "now"]]


@pytest.mark.parametrize("args", LISTS + SHOWS, ids=" ".join)
def test_every_list_and_show_command_prints_json_with_json(hcp: Hcp, args: list[str]) -> None:
    hcp("keys", "create", "--scope", "events:read", "--label", "listed")
    result = hcp(*args, "--json")
    assert result.exit_code == 0, result.output
    if args in LISTS:
        [json.loads(line) for line in result.stdout.splitlines()]
    else:
        assert isinstance(json.loads(result.stdout), dict)


def test_a_listed_contract_version_in_json_is_the_record(hcp: Hcp) -> None:
    [listed] = [json.loads(line) for line in hcp("contract", "list", "--json").stdout.splitlines()]
    assert (listed["name"], listed["version"], listed["status"]) == ("harness", 1, "draft")
    assert listed["created_at"].endswith("+00:00") and "T" in listed["created_at"]
    shown = json.loads(hcp("contract", "show", "harness", "1", "--json").stdout)
    assert shown["document"] == EXAMPLE.read_text() and shown["content_hash"] == listed["content_hash"]


def test_a_table_is_not_cut_at_80_columns_when_stdout_is_no_terminal(hcp: Hcp) -> None:
    label = "a-label-long-enough-that-an-80-column-table-would-wrap-it-over-several-lines-of-output"
    hcp("keys", "create", "--scope", "events:read", "--scope", "audit:read", "--label", label)
    listed = hcp("keys", "list").stdout
    [row] = [line for line in listed.splitlines() if label in line]
    assert "events:read" in row and "active" in row and len(row) > 80


def test_at_takes_relative_times_and_iso_8601(hcp: Hcp) -> None:
    for moment in ("now", "2h", "yesterday", "2026-01-01", "2026-01-01T09:30:00+01:00"):
        result = hcp("contract", "serving", "harness", "--at", moment, "--json")
        assert result.exit_code == 0, (moment, result.output)
    earlier = json.loads(hcp("contract", "serving", "harness", "--at", "2026-01-01T09:30:00+01:00",
                             "--json").stdout)
    assert earlier["at"] == "2026-01-01T08:30:00+00:00"
    assert hcp("lineage", "as-of", "--at", "30m").exit_code == 0
    assert hcp("lineage", "as-of", "1h", "--at", "30m").exit_code == 2


def test_verify_says_what_it_proved_and_holds_the_log_to_the_latest_signed_checkpoint(
        hcp: Hcp, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = json.loads(hcp("verify", "--json").stdout)["last_position"]
    alone = hcp("verify")
    assert alone.exit_code == 0, alone.output
    assert f"the chain is intact up to position {first}; a truncated tail is detected only " \
           "against a kept checkpoint (`--checkpoint`)" in alone.stdout
    assert "no checkpoint kept" in alone.stdout

    hcp("audit", "keygen", "--origin", "test.example/log", "--out", str(data_dir / "k"))
    monkeypatch.setenv("HCP_CHECKPOINT_KEY_FILE", str(data_dir / "k"))
    get_settings.cache_clear()
    for label in ("one", "two", "three"):
        hcp("keys", "create", "--scope", "events:read", "--label", label)
    assert hcp("audit", "checkpoint", "create").exit_code == 0
    head = json.loads(hcp("verify", "--json").stdout)["last_position"]
    checked = hcp("verify")
    assert checked.exit_code == 0, checked.output
    assert "against the latest checkpoint the server signed (number 1):" in checked.stdout
    assert f"CONSISTENT: the first {head} events match" in checked.stdout

    engine = make_engine(f"sqlite:///{data_dir / 'hcp.sqlite3'}")
    as_superuser(engine, sql("DELETE FROM events WHERE position > :p", p=head - 2))
    engine.dispose()
    cut = hcp("verify")
    assert cut.exit_code == 1
    assert f"intact up to position {head - 2}" in cut.stdout  # what is left still chains
    assert f"TRUNCATED: the log has {head - 2} events" in cut.stdout
    verdict = json.loads(hcp("verify", "--json").stdout)
    assert verdict["intact"] is True and verdict["ok"] is False
    assert [c["verdict"] for c in verdict["checkpoints"]] == ["truncated"]
