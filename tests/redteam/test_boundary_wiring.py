"""The gate answers held-out tasks again and checks what each model wrote: that code runs
behind the same boundary as the harness's, the container's one sandbox."""

from __future__ import annotations

from pathlib import Path

from hcp.services import Services
from hcp.settings import Settings
from kernel.db import make_engine
from trainer.gate.rollout import RolloutTarget


def test_the_gates_tasks_harness_checks_code_in_the_containers_sandbox(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    services = Services(settings, make_engine(settings.resolved_database_url))
    target = RolloutTarget(base_dir=tmp_path, adapter_dir=None, max_new_tokens=8)
    harness = services.runner.gate.harness("tasks")(target)
    assert harness.sandbox is services.code_sandbox  # type: ignore[attr-defined]
    assert not services.code_sandbox.allow_unsandboxed


def test_the_unsafe_opt_in_is_the_operators_setting(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, unsafe_run_model_code_without_sandbox=True)
    services = Services(settings, make_engine(settings.resolved_database_url))
    assert services.code_sandbox.allow_unsandboxed
