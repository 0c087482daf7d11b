"""The two things the sandbox must not let a candidate reach besides the kernel: a way
around the audit hook (the only layer under the unsafe opt-in), and the project's own
code (the reference implementations are a reward forgery: an answer that imports the
task's reference passes every hidden test).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.checks.sandbox import CodeSandbox, SandboxLimits, SandboxUnavailable

REPO = Path(__file__).resolve().parents[2]


def returned(code: str, *args: object, sandbox: CodeSandbox) -> object:
    (outcome,) = sandbox.call_many([(code, "probe", [list(args)])])
    if outcome.failed is not None:
        return f"failed: {outcome.failed}"
    (value,) = outcome.values
    print("returned:", value)
    return value.get("value", value.get("raised"))


# --- sub-interpreters: a fresh interpreter has none of the hooks ------------------------------

ESCAPES = {
    "_xxsubinterpreters": """
import _xxsubinterpreters as interpreters
interpreters.run_string(interpreters.create(), WRITE)
""",
    "the same module under a built name": """
import importlib
m = importlib.import_module("_xx" + "subinterpreters")
m.run_string(m.create(), WRITE)
""",
    "_testcapi.run_in_subinterp": """
import _testcapi
_testcapi.run_in_subinterp(WRITE)
""",
    "test.support.run_in_subinterp": """
from test import support
support.run_in_subinterp(WRITE)
""",
    "an extension module loaded by its path, under a made-up package": """
import importlib.machinery, importlib.util, sys
for folder in sys.path:
    for name in (listdir(folder) if isdir(folder) else ()):
        if name.startswith(("_xxsub", "_testcapi", "_interpreters")) and name.endswith(".so"):
            # a made-up package in front: the init function is found by the last part
            loader = importlib.machinery.ExtensionFileLoader("innocent." + name.split(".")[0],
                                                             folder + "/" + name)
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
            loader.exec_module(module)
            if hasattr(module, "run_in_subinterp"):
                module.run_in_subinterp(WRITE)
            else:
                module.run_string(module.create(), WRITE)
""",
}


def escape_code(how: str) -> str:
    # Inside the sub-interpreter: a write, which the hook refuses and the boundary allows
    # (the private /tmp), so the file's existence says whether the hook was passed.
    body = ESCAPES[how].strip().replace("\n", "\n        ")
    return f"""
from os import getcwd, listdir
from os.path import exists, isdir, join
WRITE = "open(__import__('os').getcwd() + '/escaped', 'w').write('x')"
def probe():
    try:
        {body}
    except BaseException:
        pass
    return exists(join(getcwd(), "escaped"))
"""


@pytest.mark.parametrize("how", sorted(ESCAPES))
def test_a_sub_interpreter_does_not_get_past_the_hook(how):
    assert returned(escape_code(how), sandbox=CodeSandbox()) is False


@pytest.mark.parametrize("how", sorted(ESCAPES))
def test_nor_the_hook_alone_as_under_the_unsafe_opt_in(how, tmp_path):
    """Under the unsafe opt-in the hook is the only layer. Run as this user (not the
    dropped ``nobody`` of a root server, who may not be able to read the extension
    modules at all), so each module is there to be tried."""
    hook = (REPO / "harness/checks/sandbox_driver.py").read_text().split("\ndef main")[0]
    program = f"{hook}\nimport sys\nsys.addaudithook(audit_hook)\n{escape_code(how)}\nprint(probe())"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", program], cwd=tmp_path,
                          capture_output=True, text=True, env={}, timeout=60)
    assert done.stdout.strip() == "False", done.stderr[-2000:]
    assert not (tmp_path / "escaped").exists()


# --- the project's own modules -----------------------------------------------------------------

@pytest.fixture
def installed_into_the_base_interpreter():
    """A package installed into the base interpreter's site-packages, as a container's
    ``pip install .`` would put the project there (a unique name: other sandboxes on the
    machine must not see a ``harness`` appear)."""
    base = Path(sysconfig.get_paths(vars={"base": sys.base_prefix,
                                          "platbase": sys.base_exec_prefix})["purelib"])
    name = f"hcp_reference_{uuid.uuid4().hex[:12]}"
    try:
        (base / name).mkdir()
    except OSError as exc:
        pytest.skip(f"cannot write the base interpreter's site-packages: {exc}")
    (base / name / "__init__.py").write_text("def sq(x):\n    return x * x\n")
    yield name
    shutil.rmtree(base / name)


def test_what_is_installed_into_the_interpreter_is_out_of_reach(installed_into_the_base_interpreter):
    got = returned("""
import importlib.util, os, sys
def probe(name, server_path):
    found = []
    candidates = list(server_path)
    for root, dirs, _ in os.walk("/"):
        candidates += [os.path.join(root, d) for d in dirs if d in ("site-packages", "dist-packages")]
    sys.path.extend(candidates)
    for module in (name, "harness", "harness.tasks.coding_templates", "trainer", "contract", "hcp"):
        try:
            if importlib.util.find_spec(module) is not None:
                found.append(module)
        except Exception:
            pass
    return found
""", installed_into_the_base_interpreter, sys.path, sandbox=CodeSandbox(python_hook=False))
    assert got == []


def test_grading_is_refused_when_the_projects_modules_are_reachable_inside(leaked_checkout: Path):
    leaky = CodeSandbox(extra_ro_binds=(str(leaked_checkout),))
    with pytest.raises(SandboxUnavailable, match="harness"):
        _ = leaky.boundary
    assert CodeSandbox().boundary == "bubblewrap"


@pytest.fixture
def leaked_checkout() -> Iterator[Path]:
    """The checkout, bound where the candidate could import from it. A checkout under /tmp
    is hidden behind the sandbox's own /tmp, so it is not reachable where it is: a copy of
    one of its packages is, in a site-packages directory of its own outside /tmp, which the
    check also searches (a link would not do: binds are followed to their real path)."""
    if not REPO.is_relative_to("/tmp"):  # noqa: S108 - the host's /tmp, as the sandbox mounts it
        yield REPO
        return
    home = Path.home() / ".cache" / f"hcp-leak-{uuid.uuid4().hex[:8]}"
    try:
        shutil.copytree(REPO / "harness", home / "site-packages" / "harness",
                        ignore=shutil.ignore_patterns("__pycache__"))
        yield home / "site-packages"
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_the_candidate_sees_the_standard_library_not_the_whole_prefix():
    got = returned("""
import os, sys
def probe():
    prefix = sys.base_prefix
    return sorted(os.listdir(prefix)), sorted(os.listdir(os.path.join(prefix, "bin")))
""", sandbox=CodeSandbox(SandboxLimits(timeout_s=5.0), python_hook=False))
    assert isinstance(got, list)
    top, binaries = got
    assert "include" not in top and "share" not in top
    assert not [b for b in binaries if b.startswith(("pip", "idle", "pydoc", "2to3"))]
