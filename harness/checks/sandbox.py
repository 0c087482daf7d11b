"""Running model-written Python against hidden tests, away from the server process.

Layers, outermost first (none alone is a security boundary; together they stop the
accidents a small model makes: infinite loops, huge allocations, deleting files,
opening sockets):

1. one runner subprocess per batch: `python -I` (isolated: no PYTHON* variables, no
   user site, no cwd on sys.path), an empty environment, a fresh temporary cwd;
2. the runner forks one child per candidate, so a candidate that monkeypatches
   builtins or leaks state cannot affect the next one, and forking is cheap (~2 ms)
   where a new interpreter per candidate costs ~30 ms;
3. in the child, before the candidate runs: rlimits (address space, CPU seconds, no
   file writes, few descriptors) and a PEP 578 audit hook that refuses sockets,
   subprocesses, exec, fork, file writes and deletions, and importing ctypes (which
   could bypass the hook);
4. the runner kills a child that outlives its wall-clock deadline.

Production should add a real boundary around the runner (a container or nsjail/gVisor
with no network namespace, a read-only root); `unshare` is not available here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

RUNNER = r'''
import json, os, resource, select, signal, sys, time

BLOCKED_EVENTS = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn",
                  "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.remove", "os.unlink",
                  "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
                  "shutil.", "pty.", "ctypes.", "winreg.", "sys.addaudithook", "os.putenv")
BLOCKED_IMPORTS = {"ctypes", "_ctypes", "socket", "_socket", "subprocess", "multiprocessing"}

def hook(event, args):
    if event.startswith(BLOCKED_EVENTS):
        raise PermissionError("sandbox: " + event)
    if event == "import" and args[0].split(".")[0] in BLOCKED_IMPORTS:
        raise PermissionError("sandbox: import " + args[0])
    if event == "open":
        mode, flags = (args[1] or ""), (args[2] if len(args) > 2 else 0) or 0
        if any(c in str(mode) for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError("sandbox: write")

def child(job, cfg, w):
    mem = cfg["memory_mb"] << 20
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    cpu = int(cfg["timeout_s"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
    devnull = os.open(os.devnull, os.O_WRONLY)  # a candidate's prints must not reach the protocol
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    out = {"compiled": False, "defined": False, "results": [], "error": None}
    sys.addaudithook(hook)
    try:
        code = compile(job["code"], "<candidate>", "exec")
        out["compiled"] = True
        env = {"__name__": "candidate"}
        exec(code, env)
        fn = env.get(job["entry"])
        out["defined"] = callable(fn)
        for test in job["tests"] if callable(fn) else []:
            try:
                got = json.loads(json.dumps(fn(*test["args"])))
                out["results"].append(got == test["expected"])
            except BaseException as e:  # a failing test, not a failing run
                out["results"].append(False)
                out["error"] = out["error"] or type(e).__name__
    except BaseException as e:
        out["error"] = type(e).__name__ + ": " + str(e)[:200]
    os.write(w, json.dumps(out).encode())
    os._exit(0)

def run_one(job, cfg):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child(job, cfg, w)
    os.close(w)
    deadline, chunks = time.monotonic() + cfg["timeout_s"], []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([r], [], [], left)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return {"compiled": None, "defined": None, "results": [], "error": "timeout"}
        chunk = os.read(r, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if not chunks:  # killed by an rlimit (SIGKILL/SIGXCPU) or crashed in C
        return {"compiled": None, "defined": None, "results": [], "error": f"died:{status}"}
    return json.loads(b"".join(chunks))

cfg = json.loads(sys.stdin.readline())
for line in sys.stdin:
    print(json.dumps(run_one(json.loads(line), cfg)), flush=True)
'''


def run_python_tests(
    jobs: Sequence[dict[str, Any]], *, timeout_s: float = 2.0, memory_mb: int = 256
) -> list[dict[str, Any]]:
    """Each job is {"code", "entry", "tests": [{"args", "expected"}]}; one result per job.

    A result is {"compiled", "defined", "results": [bool per test], "error"}; `compiled`
    and `defined` are None when the child was killed (timeout, rlimit).
    """
    if not jobs:
        return []
    cfg = json.dumps({"timeout_s": timeout_s, "memory_mb": memory_mb})
    stdin = "\n".join([cfg, *(json.dumps(j) for j in jobs)]) + "\n"
    with tempfile.TemporaryDirectory(prefix="hcp-sandbox-") as cwd:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", RUNNER], input=stdin, capture_output=True,
            text=True, env={}, cwd=cwd, timeout=30 + len(jobs) * (timeout_s + 0.5),
        )
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or len(lines) != len(jobs):
        raise RuntimeError(f"sandbox runner failed ({proc.returncode}): {proc.stderr[-500:]}")
    return [json.loads(line) for line in lines]
