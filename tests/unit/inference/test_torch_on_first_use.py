"""The embedded engine imports torch when it first decodes, not when it is built: a server
whose chat answers only refusals (no specialist served, a bad request) never loads it, and
its first such answer is not held up by the import (seconds on a loaded machine)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
from pathlib import Path
from inference.embedded.engine import EmbeddedEngine
from inference.memo import AnswerMemo
engine = EmbeddedEngine(Path, None, 4, 0.005, 8, 30.0, AnswerMemo(Path(sys.argv[1])))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "peft"))))
"""


def test_building_the_embedded_engine_loads_no_torch(tmp_path) -> None:
    run = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=True)
    assert json.loads(run.stdout.splitlines()[-1]) == []
