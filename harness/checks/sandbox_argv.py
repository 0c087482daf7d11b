"""The bubblewrap command lines around the driver, and the file view they build.

The candidate sees the interpreter and what it needs to start and import the standard
library, nothing of the prefix it is installed in besides: the binary, its shared
library, the standard library with its extension modules, and the system's shared
libraries (``/usr/lib``), read-only. Left out even there: every ``site-packages`` and
``dist-packages`` (a deployment that installs the project into the interpreter puts the
reference implementations there), other Python trees under ``/usr/lib``, the ``test``
package, and the extension modules of CPython's test and experimental families
(``_test*``, ``_xx*``, ``_interp*``, ``xx*``: among them every module that can start a
sub-interpreter, which would run without the driver's audit hook), each covered by
``/dev/null`` so that no loader can map it.

Three shapes, the first the probe finds working (``sandbox.py``):

- ``nested`` (a root server where unprivileged user namespaces exist): bubblewrap as root
  makes the namespaces and the view; inside, ``setpriv`` becomes ``nobody`` and a second
  bubblewrap, unprivileged, makes a user namespace with ``--disable-userns`` and installs
  the seccomp filter. The candidate is ``nobody`` and can make no user namespace, by the
  kernel's count (``user.max_user_namespaces`` = 1 in its namespace) and by the filter.
- ``single`` (a root server where they do not: then ``nobody`` cannot make one either):
  one bubblewrap as root with the filter; the driver becomes ``nobody`` itself.
- ``user`` (a server not run as root): one bubblewrap with a user namespace,
  ``--disable-userns`` and the filter.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_TMP = "/tmp"  # noqa: S108 - the sandbox's own private tmpfs, not the host's /tmp
NOBODY = "65534"
HIDDEN_DIRS = ("site-packages", "dist-packages", "test")
HIDDEN_EXTENSIONS = ("_test*", "_xx*", "_interp*", "xx*")
NAMESPACES = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
              "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]


@dataclass(frozen=True)
class View:
    """What the candidate's root holds: read-only binds, and what is masked inside them."""

    binds: tuple[str, ...]
    hidden_dirs: tuple[str, ...]  # an empty tmpfs over each
    masked_files: tuple[str, ...]  # /dev/null over each: no longer a module one can load
    helpers: tuple[str, ...] = field(default=())  # setpriv and bwrap, for the nested shape


def interpreter_view(extra_binds: tuple[str, ...] = ()) -> View:
    """The view of this process's interpreter (``extra_binds``: more read-only paths)."""
    python = os.path.realpath(sys.executable)
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    stdlib = os.path.realpath(paths["stdlib"])
    libs = [lib for lib in ("/usr/lib", "/usr/lib64") if os.path.isdir(lib)]
    binds = [*libs, python, *_libpython(libs), stdlib, *map(os.path.realpath, extra_binds)]
    hidden = [os.path.join(stdlib, name) for name in HIDDEN_DIRS]
    hidden += [p for lib in libs for p in glob.glob(f"{lib}/python3*")
               if not stdlib.startswith(p.rstrip("/") + "/") and p != stdlib]
    # Masked rather than left out of a fresh directory: every mount is copied into the
    # inner namespace, and binding each kept module one by one cost 55 ms an answer.
    dynload = os.path.join(stdlib, "lib-dynload")
    masked = tuple(sorted(os.path.join(dynload, name) for name in _listdir(dynload)
                          if any(fnmatch.fnmatch(name, p) for p in HIDDEN_EXTENSIONS)))
    return View(tuple(dict.fromkeys(binds)), tuple(h for h in hidden if os.path.isdir(h)),
                masked)


def _libpython(libs: list[str]) -> list[str]:
    """The interpreter's shared library, where it is not among the system's."""
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return []
    name, folder = sysconfig.get_config_var("INSTSONAME"), sysconfig.get_config_var("LIBDIR")
    path = os.path.realpath(os.path.join(folder or "", name or ""))
    inside = any(path.startswith(lib + "/") for lib in libs)
    return [] if inside or not os.path.isfile(path) else [path]


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def helpers() -> tuple[str, ...] | None:
    """setpriv and bwrap's real paths, for the nested shape, or None where one is missing."""
    found = [shutil.which("setpriv"), shutil.which("bwrap")]
    if None in found:
        return None
    return tuple(os.path.realpath(p) for p in found if p is not None)


def view_args(view: View, tmpfs_bytes: int) -> list[str]:
    """The bubblewrap arguments that build ``view`` (run by root or in a user namespace)."""
    binds = [*view.binds, *view.helpers]
    # Directories above the binds made first, readable by nobody: bubblewrap run by root
    # makes missing parents 0700, which would hide the interpreter from the dropped user.
    parents = sorted({str(p) for b in binds for p in Path(b).parents if str(p) != "/"})
    argv: list[str] = []
    for parent in parents:
        argv += ["--perms", "0755", "--dir", parent]
    for path in binds:
        argv += ["--ro-bind", path, path]
    for lib in ("/usr/lib", "/usr/lib64"):
        if lib in view.binds:
            argv += ["--symlink", lib[1:], lib[4:]]  # /lib -> usr/lib, as on the host
    for hidden in view.hidden_dirs:
        argv += ["--tmpfs", hidden]
    for masked in view.masked_files:
        argv += ["--ro-bind", "/dev/null", masked]
    return argv + ["--dev", "/dev", "--size", str(tmpfs_bytes), "--perms", "1777",
                   "--tmpfs", SANDBOX_TMP]


def command(shape: str, bwrap: str, view: View, tmpfs_bytes: int, seccomp_fd: int,
            program: list[str]) -> list[str]:
    """The whole command line for ``shape`` (see the module docstring)."""
    if shape == "user":
        return [bwrap, *NAMESPACES, "--unshare-user", "--disable-userns",
                *view_args(view, tmpfs_bytes), "--chdir", SANDBOX_TMP,
                "--seccomp", str(seccomp_fd), "--", *program]
    # Root keeps CAP_SETUID and CAP_SETGID, for becoming nobody; nothing else.
    outer = [bwrap, *NAMESPACES, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID",
             "--cap-add", "CAP_SETGID"]
    if shape == "single":
        return [*outer, *view_args(view, tmpfs_bytes), "--chdir", SANDBOX_TMP,
                "--seccomp", str(seccomp_fd), "--", *program]
    setpriv, inner_bwrap = view.helpers
    inner = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             "--inh-caps=-all", "--bounding-set=-all", "--",
             inner_bwrap, "--unshare-user", "--disable-userns", "--die-with-parent",
             "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--bind", SANDBOX_TMP,
             SANDBOX_TMP, "--tmpfs", "/proc"]
    for helper in view.helpers:  # the candidate has no use for either
        inner += ["--ro-bind", "/dev/null", helper]
    inner += ["--chdir", SANDBOX_TMP, "--seccomp", str(seccomp_fd), "--", *program]
    return [*outer, *view_args(view, tmpfs_bytes), "--proc", "/proc", "--chdir", SANDBOX_TMP,
            "--", *inner]
