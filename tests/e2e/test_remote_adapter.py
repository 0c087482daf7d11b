"""A serving host with nothing but the API loads any adapter with stock peft: in an empty
directory, in its own process that imports no module of the server (tests/remote_host.py),
it downloads an adapter `hcp serve` answered with and the base its adapter_config.json
names, loads the pair with AutoPeftModelForCausalLM, and answers the recorded turn exactly
as the server did (and otherwise than the bare base)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serve_process import chat, hcp_serve, served_adapter

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]
REMOTE = Path(__file__).resolve().parents[1] / "remote_host.py"


def test_a_host_with_only_the_api_answers_as_the_server_with_stock_peft(
        tmp_path: Path, sqlite_template: Path) -> None:
    scopes = ["chat:write", "events:read", "registry:read"]
    with hcp_serve(tmp_path, sqlite_template, scopes) as served, served.http() as http:
        adapter = served_adapter(served)
        answer, session = chat(http, adapter.adapter_id, "hello there, what is the weather?")
        host = tmp_path / "another-host"
        host.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HCP_")}
        ran = subprocess.run([sys.executable, str(REMOTE), served.url, served.key,
                              adapter.adapter_id, f"session-{session}"], cwd=host,
                             env={**env, "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
                             timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    got = json.loads(ran.stdout.strip().splitlines()[-1])
    assert got["base_model_name_or_path"] == "tiny"  # a name the API resolves, not a path
    assert got["adapter_text"] == answer
    assert got["base_text"] != answer  # the adapter, not the base, gave the answer
