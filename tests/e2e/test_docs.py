"""Docs as tests: every runnable bash and Python block of README.md and docs/*.md runs, in
page order, in the world the page says it assumes (tests/docs_pages.py), as a reader would
run it in one terminal; a block that fails fails the test, naming the page and its line.

Each page gets a working directory of its own: the checkout's files linked in (so
`examples/…`, `scripts/…` and `.venv` are where the page says), and for a page on the demo's
data a copy of one `hcp demo --model tiny` made once per session (the cost stays one demo
run however many pages use it). The environment is a newcomer's (no `HCP_` variables), with
this virtualenv's `bin` first on PATH. Port 8000, which the pages name, becomes a free port
so that pages and other test runs never collide. Everything a page started in the
background (`hcp serve … &`) is stopped when the page ends.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.docs_pages import ROOT, Page, pages, read_page
from tests.ports import free_port

pytest.importorskip("peft")
pytestmark = [pytest.mark.train, pytest.mark.slow]

BIN = Path(sys.executable).parent
DRIVER = ROOT / "tests" / "docs_driver.py"
PORT_8000 = re.compile(r"(127\.0\.0\.1:|localhost:|--port )8000\b")
PAGE_TIMEOUT_S = 1200
# Beyond "every block ran": what a reader is told they will see.
EXPECTED = {
    "README.md": ["audit ok", "CONSISTENT: the first", "published default@2"],
    "docs/audit.md": ["proven: event", "is a prefix of the log", "every row is what the log says"],
    "docs/client.md": ["contract.published docs-example", "lineage verified: True",
                       "['adapter_config.json', 'adapter_model.safetensors'] hcp-tiny",
                       "404 not_found"],
    "docs/contract-authoring.md": ["not modified", "\n304\n"],
    "docs/integrations.md": ["│ trace.linked "],
    "docs/serving.md": ["turn.assistant session-", "['feedback.given', 'episode.completed']",
                        "continued by history True", "json ['a', 'b'] 2"],
}
SKIPPED_IN_LINKS = {".git", ".venv", "hcp-data", ".hcp-services", "tests"}


def newcomer_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HCP_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    # This checkout's client, whichever checkout the virtualenv's editable install names.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "clients" / "python"),
                                                      env.get("PYTHONPATH")]))
    env.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", HCP_CONSOLE_SECRET="docs-test-secret")
    return env


@pytest.fixture(scope="session")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`hcp demo --model tiny` once, in a directory of its own: its ./hcp-data."""
    where = tmp_path_factory.mktemp("demo-world")
    ran = subprocess.run([str(BIN / "hcp"), "demo", "--model", "tiny"], cwd=where,
                         env=newcomer_env(), capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-4000:]
    return where / "hcp-data"


def workdir(into: Path, page: Page, demo: Path | None) -> Path:
    """The page's working directory: the checkout linked in, the demo's data copied."""
    work = into / "work"
    work.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in SKIPPED_IN_LINKS:
            (work / entry.name).symlink_to(entry)
    (work / ".venv").symlink_to(BIN.parent)
    if demo is not None:
        shutil.copytree(demo, work / "hcp-data")
    return work


def run_page(page: Page, work: Path, env: dict[str, str]) -> tuple[int, str]:
    port = str(free_port())
    blocks = [{"page": b.page, "line": b.line, "lang": b.lang,
               "code": PORT_8000.sub(rf"\g<1>{port}", b.code)} for b in page.runnable]
    spec = work.parent / "blocks.json"
    spec.write_text(json.dumps(blocks))
    log = work.parent / "page.log"
    with log.open("wb") as out:
        # A session of its own, so that whatever the page left running is stopped with it.
        driver = subprocess.Popen([sys.executable, str(DRIVER), str(spec)], cwd=work, env=env,
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = driver.wait(PAGE_TIMEOUT_S - 120)
        except subprocess.TimeoutExpired:
            rc = -1
        finally:
            stop_group(driver.pid)
    return rc, log.read_text(errors="replace")


def stop_group(pgid: int) -> None:
    for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


RUNNABLE = [read_page(p) for p in pages() if read_page(p).runnable]


@pytest.mark.timeout(PAGE_TIMEOUT_S)
@pytest.mark.parametrize("page", RUNNABLE, ids=[p.path for p in RUNNABLE])
def test_every_runnable_block_of_the_page_runs(page: Page, tmp_path: Path,
                                                request: pytest.FixtureRequest) -> None:
    env = newcomer_env()
    demo = request.getfixturevalue("demo_data") if page.world == "demo" else None
    if page.world == "services":
        for name in ("HCP_TEST_POSTGRES_URL", "HCP_TEST_KAFKA_BOOTSTRAP", "HCP_TEST_REDIS_URL"):
            env[name] = request.getfixturevalue({"HCP_TEST_POSTGRES_URL": "postgres_admin_url",
                                                 "HCP_TEST_KAFKA_BOOTSTRAP": "kafka_bootstrap",
                                                 "HCP_TEST_REDIS_URL": "redis_url"}[name])
    rc, out = run_page(page, workdir(tmp_path, page, demo), env)
    assert rc == 0, f"{page.path}: a block failed (exit {rc})\n{out[-6000:]}"
    missing = [text for text in EXPECTED.get(page.path, []) if text not in out]
    assert not missing, f"{page.path}: the output lacks {missing}\n{out[-6000:]}"
