"""What model-written code tried to do from inside the coding check's sandbox, and must
not manage: reach the network, read the server's secrets, leave processes behind, touch
the host's files, or take the batch down with it.

Most attacks run with the in-process audit hook switched off (``python_hook=False``):
they show that the operating-system boundary holds alone, as if the candidate had found
its way past the hook (which is only a second layer). Every attempt reports what it got
as its function's return value, so a test reads exactly what the code could see.
"""

from __future__ import annotations

import os
import resource
import socket
import time
import uuid
from pathlib import Path

import pytest

from harness.checks import run_checks
from harness.checks.sandbox import CodeSandbox, SandboxLimits

NO_HOOK = CodeSandbox(SandboxLimits(timeout_s=5.0), python_hook=False)


def returned(code: str, *args: object, sandbox: CodeSandbox = NO_HOOK) -> object:
    """What ``probe(*args)`` returned inside the sandbox (or why nothing came back)."""
    (outcome,) = sandbox.call_many([(code, "probe", [list(args)])])
    if outcome.failed is not None:
        return f"failed: {outcome.failed}"
    (value,) = outcome.values
    print("returned:", value)  # shown with -s or on failure: what the attempt saw
    return value.get("value", value.get("raised"))


def test_no_network_not_even_the_hosts_loopback():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    got = returned("""
import socket
def probe(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return "connected"
    except OSError as e:
        return type(e).__name__
""", port)
    assert got != "connected"
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_an_exec_d_program_has_no_network_either():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.5)
    got = returned("""
import subprocess, sys
def probe(port):
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1); print('connected')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return done.stdout + done.stderr[-200:]
""", listener.getsockname()[1])
    assert isinstance(got, str) and "connected" not in got.splitlines()
    assert "ConnectionRefusedError" in got or "Network is unreachable" in got  # it did run
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_the_servers_environment_and_files_are_out_of_sight(tmp_path, monkeypatch):
    secret = f"hcp-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("HCP_DATABASE_URL", f"postgresql://hcp:{secret}@127.0.0.1/hcp")
    (tmp_path / "hcp.sqlite3").write_text(secret)
    got = returned("""
import os
def probe(data_dir, repo):
    seen = [repr(dict(os.environ))]
    for path in ("/proc/1/environ", f"/proc/{os.getppid()}/environ", "/proc/self/environ",
                 data_dir + "/hcp.sqlite3", repo + "/pyproject.toml", "/etc/passwd",
                 "/root/.bash_history"):
        try:
            with open(path, "rb") as f:
                seen.append(path + "=" + f.read(4096).decode("latin-1"))
        except OSError as e:
            seen.append(path + ":" + type(e).__name__)
    seen.append(repr(sorted(os.listdir("/"))))
    return "\\n".join(seen)
""", str(tmp_path), str(Path(__file__).parents[2]))
    assert isinstance(got, str)
    assert secret not in got
    assert "[tool.ruff]" not in got  # the repository is not there
    assert f"{tmp_path}/hcp.sqlite3:FileNotFoundError" in got
    assert "/proc/1/environ:FileNotFoundError" in got


def test_processes_it_starts_die_with_it():
    marker = f"hcp-orphan-{uuid.uuid4().hex}"
    got = returned(f"""
import os, subprocess, sys
def probe():
    for _ in range(5):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{marker}"],
                         start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", "{marker}"])
    return "started"
""")
    assert got == "started"
    time.sleep(0.5)  # the sandbox is gone once the call returns; give the kernel a moment
    assert not _host_processes_with(marker)


def test_a_fork_bomb_is_bounded_and_cleaned_up():
    marker = f"hcp-bomb-{uuid.uuid4().hex}"
    started = time.monotonic()
    got = returned(f"""
import os, time
def probe():
    n = 0
    try:
        while n < 500:
            if os.fork() == 0:
                os.execv("/proc/self/exe" if False else __import__("sys").executable,
                         ["python", "-c", "import time; time.sleep(60)", "{marker}"])
            n += 1
    except OSError:
        pass
    return n
""")
    assert isinstance(got, int) and got < NO_HOOK.limits.processes + 1
    assert time.monotonic() - started < 15
    time.sleep(0.5)
    assert not _host_processes_with(marker)


def test_host_files_get_no_links_writes_or_new_times(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    os.utime(target, (1_000_000, 1_000_000))
    got = returned("""
import os
def probe(path):
    done = []
    for name, attempt in (("symlink", lambda: os.symlink(path, path + ".sym")),
                          ("link", lambda: os.link(path, path + ".hard")),
                          ("utime", lambda: os.utime(path, (2_000_000, 2_000_000))),
                          ("write", lambda: open(path, "w").write("gone")),
                          ("tmp", lambda: open("/tmp/" + os.path.basename(path), "w").write("x"))):
        try:
            attempt()
            done.append(name)
        except OSError:
            pass
    return done
""", str(target))
    assert got == ["tmp"]  # its own private /tmp is the only place it may write
    assert target.read_text() == "keep" and target.stat().st_mtime == 1_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt"]


def test_flooding_the_result_channel_fails_that_answer_not_the_batch():
    flood = """```python
import os
def sq(x):
    for fd in range(0, 40):
        try:
            while True:
                os.write(fd, b"x" * 1048576)
        except OSError:
            pass
    return x * x
```"""
    spec = {"kind": "python_tests", "entry": "sq", "tests": [{"args": [3], "expected": 9}]}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    flooded, right = run_checks([spec, spec], [flood, "def sq(x):\n    return x * x"],
                                CodeSandbox(SandboxLimits(timeout_s=5.0), python_hook=False))
    assert not flooded.passed and flooded.detail in ("result too large", "timeout")
    assert right.passed
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB


def test_an_exceptions_message_does_not_come_back():
    spec = {"kind": "python_tests", "entry": "sq", "tests": [{"args": [3], "expected": 9}]}
    (result,) = run_checks([spec], ["def sq(x):\n    raise ValueError('the text I read: hunter2')"])
    assert not result.passed and result.detail == "ValueError"


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found
