"""The check that runs once inside the boundary before any answer is graded: none of the
project's own modules may be importable from there.

They hold the reference implementations of the coding tasks, so an answer that imports
one passes every hidden test: a full reward forgery. The check runs as the candidate
would (the same command line, filter and user) and tries every way in that it can see:
the directories the server imports them from, its ``sys.path``, and every
``site-packages``/``dist-packages`` directory in the candidate's view. It answers with
what it found; the sandbox refuses to grade while the answer is not empty.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from importlib import metadata
from pathlib import Path

# The top-level packages as pyproject.toml lists them, for a checkout that runs without
# an installed distribution to read them from.
OWN_PACKAGES = ("kernel", "events", "contract", "evaluators", "trainer", "audit", "access",
                "harness", "serving", "integrations", "migrations", "hcp", "console", "api",
                "cli", "inference")

PROGRAM = """
import importlib.util, json, os, sys
names, server_path = json.loads(sys.argv[1])
places = list(server_path)
for root, dirs, _ in os.walk("/"):
    if root in ("/proc", "/dev"):
        dirs[:] = []
        continue
    places += [os.path.join(root, d) for d in dirs if d in ("site-packages", "dist-packages")]
sys.path.extend(places)
found = []
for name in names:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    if spec is not None:
        found.append(name + " at " + str(spec.origin or list(spec.submodule_search_locations or ())))
print(json.dumps(found))
"""


def own_packages() -> list[str]:
    """The project's top-level packages: its distribution's, and the known list."""
    names = set(OWN_PACKAGES)
    try:
        by_package = metadata.packages_distributions()
    except (OSError, ValueError):  # an unreadable distribution: the known list stands
        return sorted(names)
    ours = set(by_package.get("harness", ()))
    return sorted(names | {top for top, dists in by_package.items() if ours & set(dists)})


def homes(names: list[str]) -> list[str]:
    """The directories this server imports the project's packages from."""
    found = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            if Path(location).is_dir():  # not a finder's placeholder entry
                found.append(str(Path(location).resolve().parent))
    return sorted(set(found))


def program_argv(python: str) -> list[str]:
    """The interpreter command line of the check (after bubblewrap's ``--``)."""
    names = own_packages()
    return [python, "-I", "-S", "-c", PROGRAM, json.dumps([names, homes(names) + sys.path])]


def reachable(stdout: str) -> list[str]:
    """What the check found, from its output.

    Raises:
        ValueError: the output is not the check's (it did not run to the end).
    """
    found = json.loads(stdout.strip().splitlines()[-1])
    if not isinstance(found, list):
        raise ValueError("not the startup check's answer")
    return [str(item) for item in found]
