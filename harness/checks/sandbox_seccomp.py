"""The system calls model-written code may not make: a seccomp filter built with
libseccomp (Debian's ``libseccomp2``, through the ``pyseccomp`` bindings), handed to
bubblewrap (``--seccomp FD``), which installs it right before it starts the driver. A
seccomp filter is inherited by every child and survives ``execve``, and it cannot be
removed, so it covers every process of the answer.

A deny list, the way Docker's default profile and nsjail's policies are written around
the calls a program of this kind never needs. Refused calls fail with ``EPERM`` (a clean
``OSError``), not a kill, so an honest answer that tries one fails as it would anywhere.
System calls of another architecture (32-bit ``int 0x80``, x32) kill the process:
their numbers differ, and a deny list written for one table says nothing about another.
"""

from __future__ import annotations

import errno
import functools
import tempfile
from typing import Any

# Namespaces are how an unprivileged process gets capabilities: in a user namespace of
# its own it may mount, make network namespaces and reach netfilter, the usual start of a
# kernel exploit. unshare and setns are refused outright; clone only with a CLONE_NEW*
# flag. clone3 passes its flags in memory, which a filter cannot read: it answers ENOSYS,
# and the C library falls back to clone, whose flags it can.
NAMESPACES = ("unshare", "setns")
CLONE_NEW = {"CLONE_NEWNS": 0x20000, "CLONE_NEWCGROUP": 0x2000000, "CLONE_NEWUTS": 0x4000000,
             "CLONE_NEWIPC": 0x8000000, "CLONE_NEWUSER": 0x10000000,
             "CLONE_NEWPID": 0x20000000, "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x80}
CLONE_THREAD = 0x10000

DENIED = (
    # The kernel keyring belongs to the user, not the process: a key one answer stores is
    # there for the next (and for the host's nobody).
    "keyctl", "add_key", "request_key",
    # Kernel surfaces an answer never needs, each with a history of privilege escalations.
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "fanotify_init", "lookup_dcookie",
    # Other processes' memory and descriptors.
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    # File systems: the view bubblewrap built is the only one.
    "mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
    "fsconfig", "fsmount", "fspick", "mount_setattr", "open_by_handle_at",
    "name_to_handle_at", "quotactl", "quotactl_fd", "swapon", "swapoff",
    # Memory outside the address-space limit: System V shared memory, message queues and
    # semaphores live in the IPC namespace, not in the process; a memfd is memory without
    # a mapping. The whole class goes, so no sibling call is left to hold what one refused.
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl",
    "semget", "semop", "semtimedop", "semctl", "mq_open", "mq_unlink", "mq_timedsend",
    "mq_timedreceive", "mq_notify", "mq_getsetattr", "memfd_create", "memfd_secret",
    # The machine itself.
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "syslog", "vhangup", "iopl", "ioperm", "personality", "uselib",
)
# socket() and socketpair(): local and IP sockets only (the network namespace is empty);
# netlink (netfilter, routing), packet, and every other family answer EAFNOSUPPORT.
SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6


class SeccompUnavailable(RuntimeError):
    """libseccomp or its bindings are missing: the filter cannot be built."""


def filter_program(one_process: bool = False) -> bytes:
    """The compiled BPF program bubblewrap's ``--seccomp`` reads.

    ``one_process``: also refuse new processes (threads stay allowed), for where no
    cgroup bounds the answer's memory as a whole: then the address-space rlimit of its
    one process is the bound.

    Raises:
        SeccompUnavailable: libseccomp (``libseccomp2``) or ``pyseccomp`` is missing.
    """
    return _compiled(one_process)


@functools.cache
def _compiled(one_process: bool) -> bytes:
    seccomp = _bindings()
    policy = seccomp.SyscallFilter(seccomp.ALLOW)
    policy.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    deny = seccomp.ERRNO(errno.EPERM)
    for name in (*NAMESPACES, *DENIED):
        _add(policy, seccomp, deny, name)
    for flag in CLONE_NEW.values():
        policy.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    policy.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    _only_families(policy, seccomp)
    if one_process:
        policy.add_rule(seccomp.ERRNO(errno.EAGAIN), "clone",
                        seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
        for name in ("fork", "vfork"):
            policy.add_rule(seccomp.ERRNO(errno.EAGAIN), name)
    with tempfile.TemporaryFile() as sink:
        policy.export_bpf(sink)
        sink.seek(0)
        return sink.read()


def _add(policy: Any, seccomp: Any, action: int, name: str) -> None:
    # A call this libseccomp does not know (older than the name) cannot be made through
    # its number either on this kernel's table as libseccomp sees it; skip it.
    if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0:
        return
    policy.add_rule(action, name)


def _only_families(policy: Any, seccomp: Any) -> None:
    # Compared as 64-bit values: a family with garbage in the upper half (which the
    # kernel would truncate) is above the last allowed one and refused too.
    refuse, last = seccomp.ERRNO(errno.EAFNOSUPPORT), max(SOCKET_FAMILIES)
    for call in ("socket", "socketpair"):
        policy.add_rule(refuse, call, seccomp.Arg(0, seccomp.GT, last))
        for family in range(last):
            if family not in SOCKET_FAMILIES:
                policy.add_rule(refuse, call, seccomp.Arg(0, seccomp.EQ, family))


def _bindings() -> Any:
    try:
        import pyseccomp
    except (ImportError, RuntimeError) as exc:  # RuntimeError: libseccomp.so not found
        raise SeccompUnavailable(f"libseccomp is not usable ({exc}); install the Debian "
                                 "package libseccomp2 and the Python package pyseccomp") from exc
    return pyseccomp
