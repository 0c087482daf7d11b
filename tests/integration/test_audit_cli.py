"""`hcp audit …` and `hcp verify --checkpoint` as an operator and an auditor run them."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.main import app as cli
from hcp.settings import get_settings
from tests.integration import audit_world
from tests.integration.audit_world import KEY, World
from tests.integration.superuser import as_superuser, sql

world = audit_world.world
VKEY = KEY.verifier().vkey()


@pytest.fixture
def hcp(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    monkeypatch.setenv("HCP_DATABASE_URL", world.c.settings.database_url)
    monkeypatch.setenv("HCP_DATA_DIR", str(world.c.settings.data_dir))
    monkeypatch.setenv("HCP_CHECKPOINT_KEY_FILE", str(world.key_file))
    monkeypatch.delenv("HCP_KAFKA_BOOTSTRAP", raising=False)
    get_settings.cache_clear()
    yield lambda *args: CliRunner().invoke(cli, list(args))
    get_settings.cache_clear()


def test_keygen_writes_a_private_file_and_prints_the_verifier_key(tmp_path: Path) -> None:
    out = tmp_path / "keys" / "checkpoint.key"
    result = CliRunner().invoke(cli, ["audit", "keygen", "--origin", "hcp.example/log", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    vkey = result.stdout.strip().splitlines()[-1]
    assert vkey.startswith("hcp.example/log+") and out.read_text().startswith("PRIVATE+KEY+hcp.example/log+")
    again = CliRunner().invoke(cli, ["audit", "keygen", "--origin", "hcp.example/log", "--out", str(out)])
    assert again.exit_code == 2 and "exists" in again.output
    bad = CliRunner().invoke(cli, ["audit", "keygen", "--origin", "has space", "--out", str(tmp_path / "k")])
    assert bad.exit_code == 2 and "--origin" in bad.output


def test_audits_pass_then_name_each_mismatch_and_exit_non_zero(hcp, world: World) -> None:
    ok = hcp("audit", "adapter", "coding@2")
    assert ok.exit_code == 0, ok.output
    assert "audit ok" in ok.output
    everything = hcp("audit", "all", "--json")
    assert everything.exit_code == 0, everything.output
    assert json.loads(everything.stdout)["ok"] is True
    as_superuser(world.c.engine, sql("UPDATE adapter_versions SET parent_adapter_id = NULL "
                                     "WHERE adapter_id = 'coding@2'"))
    as_superuser(world.c.engine, sql("UPDATE contract_versions SET document = document || '\n# x' "
                                     "WHERE name = 'default'"))
    failed = hcp("audit", "adapter", "coding@2")
    assert failed.exit_code == 1
    assert "MISMATCH [adapter_versions] adapter_versions adapter_id=coding@2: parent_adapter_id" \
        in failed.output
    assert "MISMATCH [contract_versions] contract_versions name=default, version=1: document" in failed.output
    report = hcp("audit", "all", "--json")
    assert report.exit_code == 1
    assert json.loads(report.stdout)["mismatch_count"] == 2
    assert hcp("audit", "adapter", "coding@9").exit_code == 3


def test_an_exported_checkpoint_catches_the_deleted_tail(hcp, world: World, tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    exported = hcp("audit", "checkpoint", "export", "--out", str(kept))
    assert exported.exit_code == 0, exported.output
    vkey_file = tmp_path / "log.vkey"
    vkey_file.write_text(VKEY + "\n")
    intact = hcp("verify", "--checkpoint", str(kept), "--key", str(vkey_file))
    assert intact.exit_code == 0, intact.output
    assert "CONSISTENT" in intact.output
    head = world.c.store.head()
    as_superuser(world.c.engine, sql("DELETE FROM events WHERE position > :p", p=head - 2))
    truncated = hcp("verify", "--checkpoint", str(kept), "--key", VKEY)
    assert truncated.exit_code == 1
    assert f"TRUNCATED: the log has {head - 2} events" in truncated.output
    assert "intact" in truncated.output  # what is left still chains: only the checkpoint shows it


def test_a_rewritten_history_fails_the_kept_checkpoint(hcp, world: World, tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    hcp("audit", "checkpoint", "export", "--out", str(kept))
    event = world.c.store.read_all(4, 1)[0]
    as_superuser(world.c.engine, sql("UPDATE events SET hash = :h WHERE position = 5", h="ab" * 32))
    result = hcp("verify", "--checkpoint", str(kept), "--key", VKEY)
    assert result.exit_code == 1 and "REWRITTEN" in result.output and event.position == 5


def test_proofs_are_checked_offline_with_only_the_public_key(hcp, world: World, tmp_path: Path) -> None:
    created = hcp("audit", "checkpoint", "create", "--json")
    assert created.exit_code == 0, created.output
    event = world.c.store.read_all(0, 10)[9]
    bundle = tmp_path / "proof.json"
    assert hcp("audit", "proof", str(event.event_id), "--out", str(bundle)).exit_code == 0
    proven = CliRunner().invoke(cli, ["audit", "prove", str(bundle), "--key", VKEY])
    assert proven.exit_code == 0, proven.output
    assert "proven: event" in proven.output and "position 10" in proven.output
    doc = json.loads(bundle.read_text())
    doc["leaf_index"] = 8
    bundle.write_text(json.dumps(doc))
    forged = CliRunner().invoke(cli, ["audit", "prove", str(bundle), "--key", VKEY])
    assert forged.exit_code == 1 and "NOT PROVEN" in forged.output
    other_key = audit_world.SigningKey.generate("hcp.test/events").verifier().vkey()
    assert CliRunner().invoke(cli, ["audit", "prove", str(bundle), "--key", other_key]).exit_code == 1

    consistency = tmp_path / "consistency.json"
    assert hcp("audit", "consistency", "1", "--out", str(consistency)).exit_code == 0
    checked = CliRunner().invoke(cli, ["audit", "prove", str(consistency), "--key", VKEY])
    assert checked.exit_code == 0 and "is a prefix of" in checked.output


def test_the_schedule_signs_only_while_the_log_grows(hcp, world: World) -> None:
    audit_world.record_rewards(world.c, world.contract_hash, 1, "late")
    result = hcp("audit", "checkpoint", "run", "--every", "0.1s", "--rounds", "2")
    assert result.exit_code == 0, result.output
    assert result.output.count("checkpoint ") == 1  # the second round found nothing new
    assert hcp("audit", "checkpoint", "run", "--every", "soon").exit_code == 2
    listed = hcp("audit", "checkpoint", "list")
    assert listed.output.count("checkpoint ") == 2


def test_the_audit_since_a_kept_checkpoint_says_what_it_covered_and_repeats(
        hcp, world: World, tmp_path: Path) -> None:
    kept = tmp_path / "kept.json"
    assert hcp("audit", "checkpoint", "export", "--out", str(kept)).exit_code == 0
    size = world.c.checkpoint_store.latest().checkpoint.size  # type: ignore[union-attr]
    audit_world.record_rewards(world.c, world.contract_hash, 2, "later")
    world.c.tree_builder.build()
    text_run = hcp("audit", "all", "--since-checkpoint")
    assert text_run.exit_code == 0, text_run.output
    assert "incremental audit since checkpoint 1" in text_run.output and "seed '" in text_run.output
    first = hcp("audit", "all", "--since-checkpoint", "--checkpoint", str(kept), "--key", VKEY,
                "--sample", "3", "--seed", "repeat-me", "--json")
    assert first.exit_code == 0, first.output
    coverage = json.loads(first.stdout)["coverage"]
    assert coverage["kind"] == "incremental" and coverage["checkpoint"] == str(kept)
    assert coverage["rehashed"] == [size + 1, world.c.store.head() - 1]  # the text run's audit.completed
    assert coverage["sample"] == 3 and coverage["seed"] == "repeat-me"
    again = hcp("audit", "all", "--since-checkpoint", "--checkpoint", str(kept), "--key", VKEY,
                "--sample", "3", "--seed", "repeat-me", "--json")
    assert json.loads(again.stdout)["coverage"]["samples"] == coverage["samples"]
    full = hcp("audit", "all", "--json")
    assert json.loads(full.stdout)["coverage"]["kind"] == "full"
    assert hcp("audit", "all", "--seed", "x").exit_code == 2  # the seed goes with --since-checkpoint
    other = audit_world.SigningKey.generate("hcp.test/events").verifier().vkey()
    refused = hcp("audit", "all", "--since-checkpoint", "--checkpoint", str(kept), "--key", other)
    assert refused.exit_code == 2 and str(kept) in refused.output
