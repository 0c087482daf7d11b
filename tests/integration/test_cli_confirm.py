"""Changes whose effect reaches past what the command names say so first, and ask on a
terminal (docs/cli.md, "Asking first"): `hcp alias set` to a rejected version (it once
pointed production at one without a word, where the console warns) and `hcp contract
publish` (which starts serving and can start training within seconds). The terminal is a
real pseudo-terminal, answered as a person would."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.serving_world import build_world, train_adapter
from tests.unit.trainer_core.fixtures import RecordingDispatcher

pytest.importorskip("peft")
pytestmark = [pytest.mark.train]
HCP = Path(sys.executable).parent / "hcp"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "contracts" / "default.toml"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Container, dict[str, str], str]]:
    """A rejected coding version, and the environment `hcp` runs in."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
           "HCP_DATA_DIR": str(tmp_path), "HCP_SERVING_CONTRACT": "default"}
    subprocess.run([str(HCP), "db", "upgrade"], env=env, check=True, capture_output=True, timeout=120)
    url = f"sqlite:///{tmp_path / 'hcp.sqlite3'}"
    c = Container(Settings(database_url=url, data_dir=tmp_path, models_dir=tmp_path / "models",
                           kafka_bootstrap="", redis_url=""), make_engine(url),
                  dispatch_to=RecordingDispatcher())
    build_world(c, tmp_path / "models")
    from tests.unit.evaluators.factories import conversation

    conversation(c.store, specialist="coding")
    c.evaluator("t").drain(timeout=60)
    adapter, _ = train_adapter(c, "coding", 5, "to be rejected")
    c.registry.set_status(adapter.adapter_id, "rejected", "tester", "worse than its parent")
    yield c, env, adapter.adapter_id
    c.close()


def hcp(env: dict[str, str], *args: str, answer: str | None = None) -> tuple[int, str]:
    """``hcp ARGS``; with ``answer``, on a terminal where that is typed. (status, stderr)"""
    if answer is None:
        done = subprocess.run([str(HCP), *args], env=env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        return done.returncode, done.stderr
    leader, follower = pty.openpty()
    proc = subprocess.Popen([str(HCP), *args], env=env, stdin=follower, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    os.close(follower)
    os.write(leader, answer.encode() + b"\n")
    _, err = proc.communicate(timeout=120)
    os.close(leader)
    return proc.returncode, err.decode()


def test_a_rejected_version_is_named_and_asked_about_before_an_alias_points_at_it(world) -> None:
    c, env, rejected = world
    move = ["alias", "set", "coding", "production", rejected, "--reason", "try it"]
    status, said = hcp(env, *move)  # nobody to ask: refused
    assert status == 4 and f"{rejected} was rejected by hand" in said and "pass --yes" in said
    status, said = hcp(env, *move, answer="n")
    assert status == 4 and "Point coding/production at" in said and "the answer was no" in said
    assert c.aliases.at("coding", "production") is None
    status, said = hcp(env, *move, answer="y")
    assert status == 0 and c.aliases.at("coding", "production").adapter_id == rejected
    c.aliases.move("coding", "production", None, "tester", "reset")
    status, said = hcp(env, *move, "--yes")
    assert status == 0 and "was rejected" in said  # not asked, still told
    assert c.aliases.at("coding", "production").adapter_id == rejected


def test_publishing_says_what_it_sets_going_and_asks_on_a_terminal(world, tmp_path: Path) -> None:
    c, env, _ = world
    assert hcp(env, "contract", "new", "default", "-f", str(EXAMPLE))[0] == 0
    status, said = hcp(env, "contract", "publish", "default", "1", answer="no")
    assert status == 4 and "Publish default@1?" in said
    assert c.contracts.get("default", 1).status == "draft"
    for told in ("publishing default@1:", "history re-scored under default@1",
                 "default@1 becomes the serving version of agent, chat, coding, genui",
                 "/v1/chat/completions (HCP_SERVING_CONTRACT=default) answers them under it",
                 "coding from alias production: nothing yet, so the base model hcp-tiny",
                 "its trigger policies come into force",
                 "genui: a run after 20 new eligible rewards, or on schedule 'every 24h'; a "
                 "successor is promoted by hand (none before)"):
        assert told in said, told
    assert "    coding:" not in said  # its policy was set through the API: it stays
    status, said = hcp(env, "contract", "publish", "default", "1")  # a script: told, not asked
    assert status == 0 and "publishing default@1:" in said and "Publish default@1?" not in said
    assert c.contracts.get("default", 1).status == "published"
    assert {s: m.version for s, m in c.serving.current("default").items()}["coding"] == 1
    assert c.policies.effective("genui").source == "contract:default@1"
    assert c.policies.effective("coding").source == "api"
