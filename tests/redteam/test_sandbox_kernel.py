"""Model-written code that goes for the kernel rather than the file system: memory held
outside its own address space, many processes, nested user namespaces and what they
open (mounts, network namespaces, netfilter), the kernel keyring, and the system calls
that kernel exploits start from.

Each attempt is native code in effect (``ctypes`` calling ``syscall(2)``), run with the
audit hook switched off: what a candidate could do once past the hook. x86-64 system
call numbers.
"""

from __future__ import annotations

import os
import platform
import uuid

import pytest

from harness.checks.sandbox import CodeSandbox, SandboxLimits

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64",
                                reason="the attempts use x86-64 system call numbers")

NO_HOOK = CodeSandbox(SandboxLimits(timeout_s=8.0), python_hook=False)
LIMIT_MIB = NO_HOOK.limits.memory_mb
# The shapes a machine may leave the sandbox in: as probed here; one bubblewrap as root
# (no unprivileged user namespaces on the host); no cgroup to be had (one process).
SHAPES = {
    "as probed": NO_HOOK,
    "one bubblewrap as root": CodeSandbox(SandboxLimits(timeout_s=8.0), python_hook=False,
                                          shapes=("single",)),
    "no cgroup": CodeSandbox(SandboxLimits(timeout_s=8.0), python_hook=False, use_cgroups=False),
}


@pytest.fixture(params=sorted(SHAPES))
def shaped(request) -> CodeSandbox:
    if request.param == "one bubblewrap as root" and os.geteuid() != 0:
        pytest.skip("that shape is a root server's")
    return SHAPES[request.param]

SYSCALL = """
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.shmat.restype = ctypes.c_void_p

def sc(nr, *args):
    ret = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a
                                             for a in args])
    return ret if ret != -1 else -ctypes.get_errno()
"""


def returned(code: str, *args: object, sandbox: CodeSandbox = NO_HOOK) -> object:
    """What ``probe(*args)`` returned inside the sandbox (or why nothing came back)."""
    (outcome,) = sandbox.call_many([(SYSCALL + code, "probe", [list(args)])])
    if outcome.failed is not None:
        return f"failed: {outcome.failed}"
    (value,) = outcome.values
    print("returned:", value)  # shown with -s or on failure: what the attempt saw
    return value.get("value", value.get("raised"))


def held_mib(got: object) -> int:
    """MiB an attempt held at once; an answer killed for its memory held less than asked."""
    if isinstance(got, str) and got.startswith("failed: "):
        return 0
    assert isinstance(got, int), got
    return got


# --- memory outside the address-space limit ----------------------------------------------

def test_system_v_shared_memory_is_not_memory_beyond_the_answers_limit(shaped):
    got = returned("""
def probe():
    held = 0
    for _ in range(8):  # 8 segments of 100 MiB, each touched, detached and kept
        shm = sc(29, 0, 100 << 20, 0o1000 | 0o600)  # shmget(IPC_PRIVATE, IPC_CREAT)
        if shm < 0:
            break
        addr = libc.shmat(shm, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            break
        ctypes.memset(addr, 1, 100 << 20)
        libc.shmdt(ctypes.c_void_p(addr))
        held += 100
    return held
""", sandbox=shaped)
    assert held_mib(got) < LIMIT_MIB


@pytest.mark.parametrize("variant", ["posix shm_open", "memfd_create", "a /tmp file",
                                     "message queues", "semaphore arrays"])
def test_other_shared_memory_calls_hold_no_more(variant):
    got = returned("""
import mmap
def hold(fd, mib):
    os.ftruncate(fd, mib << 20)
    with mmap.mmap(fd, mib << 20) as window:
        for at in range(0, mib << 20, 4096):
            window[at] = 1

def probe(variant):
    held = 0
    for i in range(8):
        try:
            if variant == "posix shm_open":
                import _posixshmem
                fd = _posixshmem.shm_open(f"/hcp-{i}", os.O_CREAT | os.O_RDWR, 0o600)
            elif variant == "memfd_create":
                fd = sc(319, b"hcp", 0)
                if fd < 0:
                    raise OSError(-fd, "memfd_create")
            elif variant == "a /tmp file":
                fd = os.open(f"/tmp/hcp-{i}", os.O_CREAT | os.O_RDWR, 0o600)
            elif variant == "message queues":  # msgget + msgsnd until refused
                q = sc(68, 0, 0o1000 | 0o600)
                if q < 0:
                    raise OSError(-q, "msgget")
                buf = ctypes.create_string_buffer(8 + 8192)
                buf[0] = 1
                sent = 0
                while sc(69, q, buf, 8192, 0o4000) == 0 and sent < (100 << 20):
                    sent += 8192
                held += sent >> 20
                continue
            else:  # semget: kernel memory per array
                s = sc(64, 0, 32000, 0o1000 | 0o600)
                if s < 0:
                    raise OSError(-s, "semget")
                held += 1
                continue
            hold(fd, 100)
            held += 100
        except (OSError, ValueError, ImportError):
            break
    return held
""", variant)
    assert held_mib(got) < LIMIT_MIB


def test_many_processes_share_one_memory_limit(shaped):
    got = returned("""
import select
def probe():
    alive, ready = [], os.pipe()
    for _ in range(15):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                block = b"\\1" * (64 << 20)  # 64 MiB, every page written
                os.write(ready[1], b"+")
                time.sleep(30)  # held until the sandbox ends
            finally:
                os._exit(0)
        alive.append(pid)
    reported, deadline = 0, time.monotonic() + 6
    while reported < len(alive) and time.monotonic() < deadline:
        if select.select([ready[0]], [], [], 0.2)[0]:
            reported += len(os.read(ready[0], 64))
    living = sum(1 for pid in alive if os.waitpid(pid, os.WNOHANG) == (0, 0))
    return 64 * min(reported, living)
""", sandbox=shaped)
    assert held_mib(got) < LIMIT_MIB


def test_each_answer_has_its_own_process_limit_not_a_share_of_the_hosts():
    """RLIMIT_NPROC counts nobody's processes on the whole host; answers graded side by
    side must not take each other's (the cgroup counts each answer's own)."""
    if NO_HOOK.setup.cgroups is None:
        pytest.skip("no cgroup here: each answer is one process")
    code = SYSCALL + """
def probe():
    started = 0
    for _ in range(12):
        try:
            if os.fork() == 0:
                time.sleep(30)
                os._exit(0)
        except OSError:
            break
        started += 1
    time.sleep(1)  # all held at once, beside the other answer's
    return started
"""
    outcomes = NO_HOOK.call_many([(code, "probe", [[]])] * 2)
    assert [o.values for o in outcomes] == [({"value": 12},)] * 2


# --- namespaces and what they open -----------------------------------------------------------

NESTED = """
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x10000000, 0x40000000

def probe():
    done = {}
    done["unshare(user)"] = sc(272, CLONE_NEWUSER)
    done["unshare(mount, net)"] = sc(272, CLONE_NEWNS | CLONE_NEWNET)
    os.makedirs("/tmp/m", exist_ok=True)
    done["mount tmpfs"] = libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, None) or 0
    if done["mount tmpfs"]:
        done["mount tmpfs"] = -ctypes.get_errno()
    done["netfilter socket"] = sc(41, 16, 3, 12)  # AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER
    return done
"""


def test_no_nested_user_namespace_no_mount_no_netfilter(shaped):
    got = returned(NESTED, sandbox=shaped)
    assert isinstance(got, dict)
    assert got["unshare(user)"] < 0
    assert got["unshare(mount, net)"] < 0
    assert got["mount tmpfs"] < 0
    assert got["netfilter socket"] < 0


def test_no_user_namespace_through_clone_either():
    got = returned("""
CLONE_NEWUSER, SIGCHLD = 0x10000000, 17
def probe():
    made = {}
    for name, flags in (("clone(user)", CLONE_NEWUSER), ("clone(net)", 0x40000000),
                        ("clone(mount)", 0x20000)):
        pid = sc(56, flags | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
        if pid > 0:
            os.waitpid(pid, 0)
        made[name] = pid > 0
    return made
""")
    assert got == {"clone(user)": False, "clone(net)": False, "clone(mount)": False}


@pytest.mark.parametrize("name,call", [
    ("bpf", "sc(321, 0, 0, 0)"),                       # bpf(BPF_MAP_CREATE, NULL, 0)
    ("perf_event_open", "sc(298, ctypes.create_string_buffer(128), 0, -1, -1, 0)"),
    ("userfaultfd", "sc(323, 1)"),                     # UFFD_USER_MODE_ONLY
    ("ptrace", "sc(101, 0, 0, 0, 0)"),                 # PTRACE_TRACEME
    ("keyctl", "sc(250, 0, -3, 0)"),                   # KEYCTL_GET_KEYRING_ID, session
    ("io_uring_setup", "sc(425, 4, ctypes.create_string_buffer(120))"),
    ("setns", "sc(308, 0, 0)"),
    ("x32 shmget", "sc(0x40000000 | 29, 0, 4096, 0o1000 | 0o600)"),
])
def test_the_system_calls_exploits_start_from_are_refused(name, call):
    got = returned(f"""
def probe():
    ret = {call}
    if ret >= 0:
        return "allowed"
    return os.strerror(-ret)
""")
    assert got in ("Operation not permitted", "failed: died"), name  # x32: killed


def test_every_process_of_the_answer_runs_under_the_filter():
    got = returned("""
import subprocess, sys
PR_GET_SECCOMP, PR_GET_NO_NEW_PRIVS = 21, 39
def probe():
    try:
        child = subprocess.run([sys.executable, "-I", "-S", "-c",
            "import ctypes; l = ctypes.CDLL(None); print(l.prctl(21, 0, 0, 0, 0), l.prctl(39, 0, 0, 0, 0))"],
            capture_output=True, text=True).stdout.strip()
    except OSError:  # where the answer is held to one process
        child = ""
    return [libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0), libc.prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
            child]
""")
    assert got in ([2, 1, "2 1"], [2, 1, ""])  # an exec'd program too, where one may start


# --- what one answer leaves for the next ---------------------------------------------------------

def test_the_kernel_keyring_does_not_outlive_an_answer(shaped):
    name, secret = f"hcp-{uuid.uuid4().hex}", uuid.uuid4().hex
    stored = returned("""
def probe(name, secret):
    made = []
    for ring in (-4, -5, -3):  # the user, user-session and session keyrings
        key = sc(248, b"user", name.encode(), secret.encode(), len(secret), ring)
        if key >= 0:
            sc(250, 15, key, 60)  # KEYCTL_SET_TIMEOUT: gone in a minute whatever happens
            made.append(ring)
    return made
""", name, secret, sandbox=shaped)
    read = returned("""
def probe(name):
    seen = []
    for ring in (-4, -5, -3):
        key = sc(250, 10, ring, b"user", name.encode(), 0)  # KEYCTL_SEARCH
        if key < 0:
            continue
        buf = ctypes.create_string_buffer(256)
        n = sc(250, 11, key, buf, 256)  # KEYCTL_READ
        seen.append(buf.raw[:max(n, 0)].decode(errors="replace"))
    return seen
""", name, sandbox=shaped)
    print("stored in", stored)
    assert isinstance(read, list) and secret not in "".join(read)


def test_each_answer_gets_a_fresh_tmp_and_dev_shm():
    marker = uuid.uuid4().hex
    returned("""
def probe(marker):
    for path in ("/tmp/" + marker, "/dev/shm/" + marker):
        try:
            with open(path, "w") as f:
                f.write(marker)
        except OSError:
            pass
    return 0
""", marker)
    got = returned("""
def probe(marker):
    return [os.path.exists("/tmp/" + marker), os.path.exists("/dev/shm/" + marker)]
""", marker)
    assert got == [False, False]
