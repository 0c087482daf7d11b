"""Running model-written Python behind an operating-system boundary.

Each candidate runs in a process of its own inside bubblewrap (Debian's ``bubblewrap``),
the layers as nsjail and gVisor build them (docs/security.md, "Model-written code"):

- **namespaces**: new network, PID, mount, IPC, UTS and cgroup namespaces: no network at
  all (not even the host's loopback), no other process visible, and every process it
  starts dies with it; a read-only view of the interpreter and the standard library
  (``sandbox_argv.py``), a private size-capped ``/tmp``, no ``/proc``, an empty
  environment; the user ``nobody`` with no capability, in a user namespace that may make
  no other (``--disable-userns``) where the host has them;
- **seccomp** (``sandbox_seccomp.py``): no new namespaces, no keyring, no System V IPC or
  memfd, no bpf, perf, userfaultfd, io_uring, ptrace or mounts, for every process;
- **one memory and pids limit over the whole answer**: a cgroup per answer
  (``sandbox_cgroup.py``), or, where none can be made, one process only; rlimits on
  address space, CPU seconds, file size, descriptors and processes besides;
- **a Python audit hook** (``sandbox_driver.py``), the second layer;
- outside, this module enforces a wall-clock deadline and reads at most ``result_bytes``
  back; a candidate that floods its channel fails that answer only.

Before the first answer a startup check runs inside the same boundary and refuses to
grade when any of the project's own modules is importable there
(``sandbox_startup.py``). The candidate never sees the expected values: it is sent only
the tests' arguments, sends back only its return values as JSON, and the comparison
happens outside (``judging.py``).

Where the boundary cannot be made (no ``bwrap``, namespaces refused, no libseccomp),
running model code is refused with ``SandboxUnavailable``, unless the operator opted in
with ``HCP_UNSAFE_RUN_MODEL_CODE_WITHOUT_SANDBOX`` (then the audit hook is all there is).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from harness.checks import sandbox_argv, sandbox_cgroup, sandbox_startup
from harness.checks.judging import judge, static_facts
from harness.checks.sandbox_channel import Outcome, exchange, kill_group, process_limit
from harness.checks.sandbox_seccomp import SeccompUnavailable, filter_program

log = logging.getLogger(__name__)

DRIVER = (Path(__file__).parent / "sandbox_driver.py").read_text()
OWN_MODULES = "the project's own modules"
STARTUP_ALLOWANCE_S = 1.0  # namespaces and the interpreter's start, before the candidate's clock
# Tasks of the boundary itself in the answer's cgroup, besides the candidate's processes:
# bubblewrap's monitor and the PID namespace's init, and the inner bubblewrap's monitor.
BOUNDARY_TASKS = {"nested": 3, "single": 2, "user": 2}


class SandboxUnavailable(RuntimeError):
    """Model-written code would have to run without the operating-system boundary."""


@dataclass(frozen=True)
class SandboxLimits:
    timeout_s: float = 2.0  # per candidate, all its tests
    memory_mb: int = 256  # the whole answer: every process, shared memory, tmpfs
    processes: int = 16
    file_bytes: int = 1 << 20
    tmpfs_bytes: int = 16 << 20
    result_bytes: int = 1 << 20
    parallel: int = max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class Boundary:
    """How answers run on this machine, as the startup probe found it."""

    shape: str  # "nested", "single" or "user" (sandbox_argv), or "none"
    containment: str  # "cgroup v2", "cgroup v1" or "one process"
    view: sandbox_argv.View | None = None
    cgroups: sandbox_cgroup.Cgroups | None = None


class CodeSandbox:
    def __init__(self, limits: SandboxLimits | None = None, allow_unsandboxed: bool = False,
                 bwrap: str = "bwrap", python_hook: bool = True,
                 extra_ro_binds: tuple[str, ...] = (), use_cgroups: bool = True,
                 shapes: tuple[str, ...] | None = None) -> None:
        """``python_hook=False`` leaves out the in-process audit hook, so the red-team
        tests can show that the operating-system boundary holds on its own.
        ``extra_ro_binds``: more host paths the candidate may read. ``use_cgroups=False``
        and ``shapes`` (which of ``sandbox_argv``'s to try) run as a machine without a
        usable cgroup, or without unprivileged user namespaces, would."""
        self.limits = limits or SandboxLimits()
        self.allow_unsandboxed, self.bwrap, self.python_hook = allow_unsandboxed, bwrap, python_hook
        self.extra_ro_binds, self.use_cgroups = tuple(extra_ro_binds), use_cgroups
        self.shapes = shapes

    @property
    def boundary(self) -> str:
        """``bubblewrap``, or ``none`` when the operator allowed running without it.

        Raises:
            SandboxUnavailable: no working bubblewrap (or the project's modules are
                reachable inside it) and no opt-in.
        """
        return "none" if self.setup.shape == "none" else "bubblewrap"

    @cached_property
    def setup(self) -> Boundary:
        """The boundary the probe found working (see ``boundary``)."""
        path = shutil.which(self.bwrap)
        cgroups = sandbox_cgroup.find() if self.use_cgroups else None
        found, problem = (None, f"'{self.bwrap}' is not installed") if path is None else \
            _probe(path, self.limits.tmpfs_bytes, self.extra_ro_binds, cgroups, self.shapes)
        if found is not None:
            return found
        if problem.startswith(OWN_MODULES):  # a forgery in reach: no opt-in covers it
            raise SandboxUnavailable(
                f"refusing to grade model-written code: {problem}. Install the project in a "
                "virtual environment, not into the interpreter the sandbox shows")
        if not self.allow_unsandboxed:
            raise SandboxUnavailable(
                f"refusing to run model-written code: {problem}. Install bubblewrap "
                "(apt-get install bubblewrap) and libseccomp2 where user or PID namespaces "
                "are allowed, or set HCP_UNSAFE_RUN_MODEL_CODE_WITHOUT_SANDBOX=true to run "
                "it with only the in-process hook and rlimits (unsafe: see docs/security.md)")
        log.warning("running model-written code WITHOUT an operating-system boundary (%s)", problem)
        return Boundary("none", "one process")

    def call_many(self, calls: Sequence[tuple[str, str, list[list[Any]]]]) -> list[Outcome]:
        """Each (code, entry, argument lists) run in a sandbox of its own, in parallel."""
        setup = self.setup
        with ThreadPoolExecutor(max_workers=self.limits.parallel) as pool:
            return list(pool.map(lambda call: self._run(setup, *call), calls))

    def _run(self, setup: Boundary, code: str, entry: str, args: list[list[Any]]) -> Outcome:
        limits = self.limits
        job = json.dumps({"code": code, "entry": entry, "args": args, "hook": self.python_hook,
                          "limits": {
            "memory_mb": limits.memory_mb,
            # CPU seconds above the wall deadline: a busy loop is reported as the timeout it is
            "cpu_s": math.ceil(limits.timeout_s + STARTUP_ALLOWANCE_S) + 1,
            "file_bytes": limits.file_bytes,
            # RLIMIT_NPROC counts every process of the user on the host (nobody's across
            # all answers at once): only where no cgroup counts this answer's own.
            "processes": None if setup.cgroups else process_limit(limits.processes)}})
        program = [os.path.realpath(sys.executable), "-I", "-S", "-c", DRIVER]
        with tempfile.TemporaryDirectory(prefix="hcp-sandbox-") as cwd, \
                _started(setup, self.bwrap, limits, program, cwd) as proc:
            return exchange(proc, job.encode(), limits.timeout_s + STARTUP_ALLOWANCE_S,
                             limits.result_bytes)


@contextlib.contextmanager
def _started(setup: Boundary, bwrap: str, limits: SandboxLimits, program: list[str],
             cwd: str, stderr: int = subprocess.DEVNULL) -> Iterator[subprocess.Popen[bytes]]:
    """The candidate's process tree, started (in its cgroup, under its filter) and, on the
    way out, killed."""
    with contextlib.ExitStack() as stack:
        fds: tuple[int, ...] = ()
        argv = program
        if setup.shape != "none" and setup.view is not None:
            fd = stack.enter_context(_filter_fd(setup.cgroups is None))
            argv = sandbox_argv.command(setup.shape, shutil.which(bwrap) or bwrap, setup.view,
                                        limits.tmpfs_bytes, fd, program)
            fds = (fd,)
            if setup.cgroups is not None:
                tasks = limits.processes + BOUNDARY_TASKS[setup.shape]
                cgroup = stack.enter_context(setup.cgroups.answer(limits.memory_mb << 20, tasks))
                argv = cgroup.enter(argv)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, env={}, cwd=cwd, pass_fds=fds,
                                start_new_session=True)
        try:
            yield proc
        finally:
            kill_group(proc)


@contextlib.contextmanager
def _filter_fd(one_process: bool) -> Iterator[int]:
    """A pipe holding the compiled filter, read by bubblewrap (which closes it)."""
    read, write = os.pipe()
    try:
        os.write(write, filter_program(one_process))  # a few KiB: within the pipe's buffer
        os.close(write)
        yield read
    finally:
        os.close(read)


@functools.cache
def _probe(bwrap: str, tmpfs_bytes: int, extra: tuple[str, ...],
           cgroups: sandbox_cgroup.Cgroups | None, only: tuple[str, ...] | None
           ) -> tuple[Boundary | None, str]:
    """The first shape whose startup check passes, else (None, what went wrong). Once per
    process and configuration: the machine does not change under a running server."""
    containment = cgroups.label if cgroups is not None else "one process"
    view = sandbox_argv.interpreter_view(extra)
    if os.geteuid() != 0:
        shapes = ["user"]
    else:
        helpers = sandbox_argv.helpers()
        shapes = ["nested", "single"] if helpers else ["single"]
    problems = []
    for shape in (s for s in shapes if only is None or s in only):
        shaped = view if shape != "nested" else dataclasses.replace(view, helpers=helpers or ())
        setup = Boundary(shape, containment, shaped, cgroups)
        problem = _check(setup, bwrap, tmpfs_bytes)
        if problem is None:
            return setup, ""
        if problem.startswith(OWN_MODULES):
            return None, problem
        problems.append(f"{shape}: {problem}")
    return None, "; ".join(problems) or f"none of the shapes {only} applies here"


def _check(setup: Boundary, bwrap: str, tmpfs_bytes: int) -> str | None:
    """None when the startup check runs inside ``setup`` and finds nothing of ours."""
    limits = SandboxLimits(tmpfs_bytes=tmpfs_bytes, timeout_s=60.0)
    program = sandbox_startup.program_argv(os.path.realpath(sys.executable))
    try:
        with tempfile.TemporaryDirectory(prefix="hcp-sandbox-") as cwd, \
                _started(setup, bwrap, limits, program, cwd, subprocess.PIPE) as proc:
            out, err = proc.communicate(timeout=60)
    except (OSError, subprocess.TimeoutExpired, SeccompUnavailable) as exc:
        return f"bubblewrap did not start: {exc}"
    try:
        found = sandbox_startup.reachable(out.decode())
    except (ValueError, IndexError):
        return f"bubblewrap could not make the boundary ({err.decode(errors='replace')[-300:]})"
    if found:
        return f"{OWN_MODULES} are importable inside the sandbox: " + ", ".join(found)
    return None


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
