"""What runs inside the sandbox: one candidate, called on each test's arguments.

This file is never imported by the server: ``sandbox.py`` reads its source and runs it
with ``python -I -S -c`` inside the operating-system boundary, one process per
candidate. It reads one JSON job from stdin, {"code", "entry", "args": [[...], ...],
"limits": {...}}, and writes one JSON document to the stdout it was started with:
{"values": [{"value": v} | {"raised": "TypeName"}, ...]} or {"failed": "TypeName"}.

The expected values never enter this process, and the comparison happens outside it,
so nothing the candidate does here (patching ``json``, walking frames, writing its own
document to the result channel) can make a wrong function pass: the most it can send
back is return values, which is what is being graded anyway.
"""

import json
import os
import resource
import sys

NOBODY = 65534
BLOCKED_EVENTS = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn",
                  "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.remove", "os.unlink",
                  "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.truncate",
                  "os.link", "os.symlink", "os.utime", "shutil.", "pty.", "ctypes.",
                  "sys.addaudithook", "os.putenv",
                  # Every new interpreter is made through this event, whatever module asks
                  # (a sub-interpreter starts without this hook).
                  "cpython.PyInterpreterState_New",
                  # Hand-made code objects (bytecode that reads and writes memory).
                  "code.__new__")
BLOCKED_IMPORTS = {"ctypes", "_ctypes", "socket", "_socket", "subprocess", "multiprocessing",
                   "_posixsubprocess", "test"}
# CPython's test and experimental extension families: _testcapi runs code in a
# sub-interpreter with no thread state (no event fires), _xxsubinterpreters and
# _interpreters make them. An extension's init function is named after the last part of
# its name, so that part is always the real one: every part is checked.
BLOCKED_FAMILIES = ("_test", "_xx", "_interp", "xx")


def refused_module(name, filename=None):
    parts = name.split(".")
    if filename:
        parts.append(os.path.basename(str(filename)).split(".")[0])
    return any(p in BLOCKED_IMPORTS or p.startswith(BLOCKED_FAMILIES) for p in parts)


def audit_hook(event, args):
    """The second layer: refuses what a well-meaning small model does by accident, and
    the known ways around itself (sub-interpreters, native code). It is not the boundary
    (docs/security.md lists what is known to pass it); the namespaces, the seccomp filter,
    the cgroup and the dropped user around this process are."""
    if event.startswith(BLOCKED_EVENTS):
        raise PermissionError("sandbox: " + event)
    if event == "import" and refused_module(args[0], args[1] if len(args) > 1 else None):
        raise PermissionError("sandbox: import " + args[0])
    if event == "open":
        mode, flags = (args[1] or ""), (args[2] if len(args) > 2 else 0) or 0
        if any(c in str(mode) for c in "wax+") or flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise PermissionError("sandbox: write")


def drop_privileges():
    # Started as root (the "single" shape: bubblewrap run by root keeps only CAP_SETUID
    # and CAP_SETGID for this): become nobody before any candidate byte runs, so
    # RLIMIT_NPROC applies (the kernel never enforces it for uid 0) and no capability is
    # left. In the other shapes the process is nobody (or the server's user) already.
    if os.getuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)


def limit(limits):
    def cap(which, value):
        resource.setrlimit(which, (value, value))

    cap(resource.RLIMIT_AS, limits["memory_mb"] << 20)
    cap(resource.RLIMIT_CPU, limits["cpu_s"])
    cap(resource.RLIMIT_FSIZE, limits["file_bytes"])
    cap(resource.RLIMIT_NOFILE, 32)
    if limits["processes"] is not None:  # else the answer's cgroup counts its tasks
        cap(resource.RLIMIT_NPROC, limits["processes"])
    cap(resource.RLIMIT_CORE, 0)


def type_name(exc):
    # Only the class name goes back: a message could quote whatever the candidate read.
    name = type(exc).__name__
    return name if name.isidentifier() and len(name) <= 64 else "Exception"


def call_all(fn, arg_lists):
    values = []
    for args in arg_lists:
        try:
            values.append({"value": json.loads(json.dumps(fn(*args)))})
        except BaseException as exc:  # a failing test, not a failing run
            values.append({"raised": type_name(exc)})
    return values


def main():
    job = json.loads(sys.stdin.buffer.read())
    result_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)  # the candidate's prints must not reach the result channel
    os.dup2(devnull, 2)
    drop_privileges()
    limit(job["limits"])
    if job["hook"]:
        sys.addaudithook(audit_hook)
    try:
        namespace = {"__name__": "candidate"}
        exec(compile(job["code"], "<candidate>", "exec"), namespace)  # noqa: S102 - sandboxed
        fn = namespace.get(job["entry"])
        out = {"values": call_all(fn, job["args"])} if callable(fn) else {"failed": "NotDefined"}
    except BaseException as exc:
        out = {"failed": type_name(exc)}
    data = json.dumps(out).encode()
    while data:
        data = data[os.write(result_fd, data):]
    os._exit(0)


if __name__ == "__main__":
    main()
