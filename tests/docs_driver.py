"""Runs one page's blocks in order, as a reader would in one terminal and one Python session:

    python tests/docs_driver.py BLOCKS.json

Python blocks share one namespace (a later block uses what an earlier one made); bash blocks
run one after another with ``set -eo pipefail``, each starting from the environment and the
working directory the previous one left (what a reader's shell keeps: ``set -a`` makes every
assignment carry over), and Python blocks see that environment too. Standard library only:
it runs in the page's working directory, with nothing of the test's process imported.
Exits 0 when every block ran, else 1 after printing which block failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

BLOCK_TIMEOUT_S = 600


def run_python(block: dict, namespace: dict) -> bool:
    # Padded so that a traceback names the page and the line of the page.
    code = compile("\n" * block["line"] + block["code"], block["page"], "exec")
    try:
        exec(code, namespace)  # noqa: S102 (the page's own code, which is the point)
    except BaseException:  # noqa: BLE001 (SystemExit from the page fails the block too)
        traceback.print_exc()
        return False
    finally:
        sys.stdout.flush()
    return True


def run_bash(block: dict, state: Path) -> bool:
    """Run the block; on the way out, keep its environment and working directory for the next."""
    script = ("set -a -eo pipefail\n"
              f"trap 'env -0 > {state}/env; pwd > {state}/cwd' EXIT\n"
              + block["code"])
    try:
        done = subprocess.run(["bash", "-c", script, block["page"]], timeout=BLOCK_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        print(f"block timed out after {BLOCK_TIMEOUT_S} s")
        return False
    carried = (state / "env").read_bytes().split(b"\0") if (state / "env").exists() else []
    pairs = (item.decode().split("=", 1) for item in carried if b"=" in item)
    kept = {name: value for name, value in pairs if name not in ("_", "SHLVL", "PWD", "OLDPWD")}
    if kept:
        os.environ.clear()
        os.environ.update(kept)
    if (state / "cwd").exists():
        os.chdir((state / "cwd").read_text().strip())
    if done.returncode != 0:
        print(f"block exited {done.returncode}")
    return done.returncode == 0


def main(path: str) -> int:
    blocks = json.loads(Path(path).read_text())
    namespace: dict = {"__name__": "__main__"}
    with tempfile.TemporaryDirectory(prefix="hcp-docs-") as state:
        for block in blocks:
            print(f"\n===== {block['page']}:{block['line']} ({block['lang']})", flush=True)
            ran = (run_python(block, namespace) if block["lang"] == "python"
                   else run_bash(block, Path(state)))
            sys.stdout.flush()
            if not ran:
                print(f"===== FAILED: the block at {block['page']}:{block['line']}", flush=True)
                return 1
    print("\n===== every block ran", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
