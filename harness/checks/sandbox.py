"""Running model-written Python behind an operating-system boundary.

Each candidate runs in a process of its own inside bubblewrap (Debian's ``bubblewrap``):

- new network, PID, mount, IPC and UTS namespaces: no network at all (not even the
  host's loopback, so no PostgreSQL, Redis, Kafka or API), no other process visible,
  and every process it starts dies with it (the namespace's init goes at the end);
- a file view of the interpreter's own files and the shared libraries, read-only, plus
  a private, size-capped tmpfs at ``/tmp``: no repository, no data directory, no
  ``/proc``, no home; an empty environment;
- inside, before any candidate byte runs, the driver (``sandbox_driver.py``) drops to
  the unprivileged user ``nobody`` (when started by root) and sets rlimits on address
  space, CPU seconds, file size, descriptors and processes, then installs a Python
  audit hook as a second layer;
- outside, this module enforces a wall-clock deadline and reads at most
  ``result_bytes`` back; a candidate that floods its channel fails that answer only.

The candidate never sees the expected values: it is sent only the tests' arguments,
sends back only its return values as JSON, and the comparison happens here. Whether the
code compiles and defines the entry point is read from its syntax tree here too.

Where the boundary cannot be made (no ``bwrap``, or namespaces refused), running model
code is refused with ``SandboxUnavailable``, unless the operator opted in with
``HCP_UNSAFE_RUN_MODEL_CODE_WITHOUT_SANDBOX`` (docs/security.md says what that loses).
"""

from __future__ import annotations

import ast
import contextlib
import json
import logging
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DRIVER = (Path(__file__).parent / "sandbox_driver.py").read_text()
MAX_CODE_CHARS = 65_536
SANDBOX_TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs, not the host's /tmp
STARTUP_ALLOWANCE_S = 1.0  # namespaces and the interpreter's start, before the candidate's clock


class SandboxUnavailable(RuntimeError):
    """Model-written code would have to run without the operating-system boundary."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 2.0  # per candidate, all its tests
    memory_mb: int = 256
    processes: int = 16
    file_bytes: int = 1 << 20
    tmpfs_bytes: int = 16 << 20
    result_bytes: int = 1 << 20
    parallel: int = max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class Outcome:
    """What came back from one candidate: one entry per test call ({"value": v} or
    {"raised": "TypeName"}), or why there is none (``failed``)."""

    values: tuple[dict[str, Any], ...] = ()
    failed: str | None = None


class CodeSandbox:
    def __init__(self, limits: SandboxLimits | None = None, allow_unsandboxed: bool = False,
                 bwrap: str = "bwrap", python_hook: bool = True) -> None:
        """``python_hook=False`` leaves out the in-process audit hook, so the red-team
        tests can show that the operating-system boundary holds on its own."""
        self.limits = limits or SandboxLimits()
        self.allow_unsandboxed, self.bwrap, self.python_hook = allow_unsandboxed, bwrap, python_hook

    @cached_property
    def boundary(self) -> str:
        """``bubblewrap``, or ``none`` when the operator allowed running without it.

        Raises:
            SandboxUnavailable: no working bubblewrap and no opt-in.
        """
        problem = _probe(self.bwrap, self.limits)
        if problem is None:
            return "bubblewrap"
        if not self.allow_unsandboxed:
            raise SandboxUnavailable(
                f"refusing to run model-written code: {problem}. Install bubblewrap "
                "(apt-get install bubblewrap) where user or PID namespaces are allowed, or set "
                "HCP_UNSAFE_RUN_MODEL_CODE_WITHOUT_SANDBOX=true to run it with only the "
                "in-process hook and rlimits (unsafe: see docs/security.md)")
        log.warning("running model-written code WITHOUT an operating-system boundary (%s)", problem)
        return "none"

    def call_many(self, calls: Sequence[tuple[str, str, list[list[Any]]]]) -> list[Outcome]:
        """Each (code, entry, argument lists) run in a sandbox of its own, in parallel."""
        argv = self._bwrap_argv() if self.boundary == "bubblewrap" else _bare_argv()
        with ThreadPoolExecutor(max_workers=self.limits.parallel) as pool:
            return list(pool.map(lambda call: self._run(argv, *call), calls))

    def _bwrap_argv(self) -> list[str]:
        return bwrap_argv(shutil.which(self.bwrap) or self.bwrap, self.limits)

    def _run(self, argv: list[str], code: str, entry: str, args: list[list[Any]]) -> Outcome:
        limits = self.limits
        job = json.dumps({"code": code, "entry": entry, "args": args, "hook": self.python_hook,
                          "limits": {
            "memory_mb": limits.memory_mb,
            # CPU seconds above the wall deadline: a busy loop is reported as the timeout it is
            "cpu_s": math.ceil(limits.timeout_s + STARTUP_ALLOWANCE_S) + 1,
            "file_bytes": limits.file_bytes, "processes": _process_limit(limits.processes)}})
        with tempfile.TemporaryDirectory(prefix="hcp-sandbox-") as cwd:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, env={}, cwd=cwd,
                                    start_new_session=True)
            try:
                return _exchange(proc, job.encode(), limits.timeout_s + STARTUP_ALLOWANCE_S,
                                 limits.result_bytes)
            finally:
                _kill_group(proc)


def bwrap_argv(bwrap: str, limits: SandboxLimits) -> list[str]:
    """The bubblewrap command line around the driver (see the module docstring)."""
    root = os.geteuid() == 0
    argv = [bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]
    if root:  # the driver needs these two to become nobody; it has nothing else
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:  # an unprivileged bwrap needs a user namespace for the others
        argv += ["--unshare-user"]
    python = os.path.realpath(sys.executable)
    prefix = os.path.realpath(sys.base_prefix)
    # The interpreter at its own path (its binary's RUNPATH may name it).
    binds = [lib for lib in ("/usr/lib", "/usr/lib64") if os.path.isdir(lib)]
    binds.append(python if prefix == "/usr" else prefix)
    # Directories above the binds made first, readable by nobody: bubblewrap run by root
    # makes missing parents 0700, which would hide the interpreter from the dropped user.
    parents = sorted({str(p) for b in binds for p in Path(b).parents if str(p) != "/"})
    for parent in parents:
        argv += ["--perms", "0755", "--dir", parent]
    for path in binds:
        argv += ["--ro-bind", path, path]
    for lib in binds[:-1]:
        argv += ["--symlink", lib[1:], lib[4:]]  # /lib -> usr/lib, as on the host
    argv += ["--dev", "/dev", "--size", str(limits.tmpfs_bytes), "--perms", "1777",
             "--tmpfs", SANDBOX_TMP, "--chdir", SANDBOX_TMP,
             "--", python, "-I", "-S", "-c", DRIVER]
    return argv


def _bare_argv() -> list[str]:
    return [os.path.realpath(sys.executable), "-I", "-S", "-c", DRIVER]


def _probe(bwrap: str, limits: SandboxLimits) -> str | None:
    """None when a trivial program runs inside the boundary, else what went wrong."""
    path = shutil.which(bwrap)
    if path is None:
        return f"'{bwrap}' is not installed"
    argv = bwrap_argv(path, limits)
    probe = [*argv[:-1], "print(1)"]  # the driver's source replaced by a trivial program
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, env={})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap did not start: {exc}"
    if done.returncode != 0 or done.stdout.strip() != "1":
        return f"bubblewrap could not make the namespaces ({done.stderr.strip()[-300:]})"
    return None


def _process_limit(extra: int) -> int:
    # As root the driver becomes nobody, whose processes are the sandboxes' alone. Without
    # root the sandbox keeps this user's id, and RLIMIT_NPROC counts all of its tasks.
    if os.geteuid() == 0:
        return extra
    return _own_tasks() + extra


def _own_tasks() -> int:
    uid, count = str(os.getuid()), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [uid]:
            count += int(fields.get("Threads", "1"))
    return count


def _exchange(proc: subprocess.Popen[bytes], job: bytes, deadline_s: float, cap: int) -> Outcome:
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(job)
        proc.stdin.close()
    except BrokenPipeError:
        return Outcome(failed="died")
    fd, chunks, size = proc.stdout.fileno(), [], 0
    deadline = time.monotonic() + deadline_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return Outcome(failed="timeout")
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        size += len(chunk)
        if size > cap:
            return Outcome(failed="result too large")
        chunks.append(chunk)
    return _parse(b"".join(chunks))


def _parse(raw: bytes) -> Outcome:
    if not raw:
        return Outcome(failed="died")  # killed by an rlimit, or crashed in C
    try:
        doc = json.loads(raw)
        if "failed" in doc:
            return Outcome(failed=str(doc["failed"])[:64])
        return Outcome(values=tuple(doc["values"]))
    except (ValueError, TypeError, KeyError, RecursionError):
        return Outcome(failed="unreadable result")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


# --- judging, outside the candidate's process ------------------------------------------

def static_facts(code: str, entry: str) -> tuple[bool, bool, str | None]:
    """(compiles, defines ``entry`` at top level, the syntax error), from the syntax tree:
    nothing the candidate runs can change them."""
    if len(code) > MAX_CODE_CHARS:
        return False, False, f"code longer than {MAX_CODE_CHARS} characters"
    try:
        tree = ast.parse(code, "<candidate>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return False, False, f"{type(exc).__name__}: {str(exc)[:200]}"
    return True, entry in _top_level_names(tree), None


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def judge(job: dict[str, Any], facts: tuple[bool, bool, str | None], outcome: Outcome | None
          ) -> dict[str, Any]:
    """{"compiled", "defined", "results": [bool per test], "error"} for one job."""
    compiled, defined, syntax_error = facts
    if outcome is None:
        return {"compiled": compiled, "defined": defined, "results": [], "error": syntax_error}
    if outcome.failed is not None:
        return {"compiled": compiled, "defined": defined, "results": [], "error": outcome.failed}
    results, error = [], None
    for test, got in zip(job["tests"], outcome.values, strict=False):
        passed = isinstance(got, dict) and "value" in got and got["value"] == test["expected"]
        results.append(bool(passed))
        if error is None and isinstance(got, dict) and "raised" in got:
            error = str(got["raised"])[:64]
    results += [False] * (len(job["tests"]) - len(results))
    return {"compiled": compiled, "defined": defined, "results": results, "error": error}


def run_python_tests(jobs: Sequence[dict[str, Any]], sandbox: CodeSandbox | None = None
                     ) -> list[dict[str, Any]]:
    """Each job is {"code", "entry", "tests": [{"args", "expected"}]}; one result per job,
    {"compiled", "defined", "results": [bool per test], "error"}.

    Raises:
        SandboxUnavailable: there is no boundary to run the code behind (and no opt-in).
    """
    facts = [static_facts(j["code"], j["entry"]) for j in jobs]
    runnable = [i for i, (compiles, _, _) in enumerate(facts) if compiles]
    outcomes: dict[int, Outcome] = {}
    if runnable:
        sandbox = sandbox or CodeSandbox()
        calls = [(jobs[i]["code"], jobs[i]["entry"], [t["args"] for t in jobs[i]["tests"]])
                 for i in runnable]
        outcomes = dict(zip(runnable, sandbox.call_many(calls), strict=True))
    return [judge(job, facts[i], outcomes.get(i)) for i, job in enumerate(jobs)]
