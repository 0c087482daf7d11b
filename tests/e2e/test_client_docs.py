"""docs/client.md runs as written: its Python blocks, in order, as one script of a user's,
against `hcp serve` with a served chat adapter (tests/serve_process.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.serve_process import hcp_serve, served_adapter

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "client.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_every_python_block_of_the_client_page_runs(tmp_path: Path, sqlite_template: Path) -> None:
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 8, "the page lost its examples"
    script = tmp_path / "client_example.py"
    script.write_text("\n\n".join(blocks))
    with hcp_serve(tmp_path, sqlite_template, ["admin"]) as served:
        adapter = served_adapter(served)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
               "HCP_SERVER_URL": served.url, "HCP_SERVER_KEY": served.key}
        ran = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = ran.stdout
    assert "contract.published docs-example" in out  # the webhook arrived, verified
    assert f"{adapter.adapter_id} " in out and "lineage verified: True" in out
    assert "['adapter_config.json', 'adapter_model.safetensors'] tiny" in out
    assert "404 not_found" in out
