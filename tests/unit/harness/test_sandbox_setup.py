"""How the sandbox finds its cgroups and what its startup check looks for, on the files
the kernel shows (made up here for the hierarchies this machine does not have)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from harness.checks import sandbox_cgroup
from harness.checks.sandbox_startup import own_packages

REPO = Path(__file__).resolve().parents[3]


def fake_proc(tmp_path: Path, cgroup: str, mountinfo: str) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text(mountinfo)
    return proc


def test_a_delegated_cgroup_v2_gets_its_controllers_enabled_for_the_answers(tmp_path):
    root = tmp_path / "unified"
    service = root / "hcp.service"
    (service / "server").mkdir(parents=True)
    (service / "cgroup.controllers").write_text("cpu memory pids\n")
    (service / "cgroup.subtree_control").write_text("\n")
    (service / "server" / "cgroup.controllers").write_text("\n")  # a leaf holding the server
    proc = fake_proc(tmp_path, "0::/hcp.service/server\n",
                     f"30 20 0:26 / {root} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
    found = sandbox_cgroup.find(proc)
    assert found is not None and found.label == "cgroup v2"
    (hierarchy,) = found.hierarchies
    assert hierarchy.parent == service
    assert (service / "cgroup.subtree_control").read_text() == "+memory +pids"


def test_cgroup_v2_without_the_memory_controller_is_no_cgroup(tmp_path):
    root = tmp_path / "unified"
    root.mkdir()
    (root / "cgroup.controllers").write_text("hugetlb\n")  # as on a hybrid host
    (root / "cgroup.subtree_control").write_text("\n")
    proc = fake_proc(tmp_path, "0::/\n", f"30 20 0:26 / {root} rw - cgroup2 cgroup2 rw\n")
    assert sandbox_cgroup.find(proc) is None


def test_a_hybrid_host_uses_the_v1_memory_and_pids_hierarchies(tmp_path):
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    (memory / "job" / "42").mkdir(parents=True)
    pids.mkdir()
    proc = fake_proc(tmp_path, "4:memory:/job/42\n8:pids:/\n0::/\n", "\n".join([
        f"31 20 0:27 / {memory} rw,nosuid - cgroup cgroup rw,memory",
        f"32 20 0:28 / {pids} rw,nosuid - cgroup cgroup rw,pids", ""]))
    found = sandbox_cgroup.find(proc)
    assert found is not None and found.label == "cgroup v1"
    assert [(h.parent, h.controllers) for h in found.hierarchies] == [
        (memory / "job" / "42", ("memory",)), (pids, ("pids",))]


def test_cgroups_left_by_a_server_that_died_are_swept_and_live_ones_kept(tmp_path):
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    stale, live = memory / "hcp-sandbox-999999999-ab", memory / f"hcp-sandbox-{os.getpid()}-cd"
    for path in (stale, live, pids):
        path.mkdir(parents=True)
    proc = fake_proc(tmp_path, "4:memory:/\n8:pids:/\n", "\n".join([
        f"31 20 0:27 / {memory} rw - cgroup cgroup rw,memory",
        f"32 20 0:28 / {pids} rw - cgroup cgroup rw,pids", ""]))
    assert sandbox_cgroup.find(proc) is not None
    assert not stale.exists() and live.exists()


def test_no_pids_hierarchy_no_cgroup(tmp_path):
    memory = tmp_path / "memory"
    memory.mkdir()
    proc = fake_proc(tmp_path, "4:memory:/\n",
                     f"31 20 0:27 / {memory} rw - cgroup cgroup rw,memory\n")
    assert sandbox_cgroup.find(proc) is None


def test_the_answer_enters_its_cgroups_before_bubblewrap_starts():
    answer = sandbox_cgroup.AnswerCgroup((Path("/cg/memory/a"), Path("/cg/pids/a")))
    argv = answer.enter(["bwrap", "--", "python"])
    assert argv[:3] == ["/bin/sh", "-c", sandbox_cgroup.ENTER]
    assert argv[4:] == ["/cg/memory/a/cgroup.procs", "/cg/pids/a/cgroup.procs", "--",
                        "bwrap", "--", "python"]


def test_the_startup_check_looks_for_every_package_the_project_ships():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    shipped = {p.rstrip("*") for p in config["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert shipped <= set(own_packages())
