"""The Python client's models are the API's: generated from its OpenAPI document, and this
fails when they drift (run `.venv/bin/python scripts/generate_client_models.py`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("generate_client_models",
                                                  ROOT / "scripts" / "generate_client_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_client_models_are_generated_from_the_current_openapi_document() -> None:
    generator = _generator()
    assert generator.TARGET.read_text() == generator.generate(), (
        "clients/python/hcp_client/models.py differs from the API's OpenAPI document: run "
        ".venv/bin/python scripts/generate_client_models.py")


def test_every_schema_of_the_document_has_a_model() -> None:
    from hcp_client import models

    from api.app import create_app

    generator = _generator()
    names = {generator.class_name(n) for n in create_app().openapi()["components"]["schemas"]}
    assert names <= set(dir(models))
    assert models.WebhookOut.model_fields.keys() >= {"subscription_id", "url", "event_types"}


def test_the_client_imports_without_a_warning_and_keeps_the_wire_names() -> None:
    """A field named like a pydantic attribute (response_format's ``schema``) is read as
    ``schema_`` but sent and received as ``schema``; importing the client warns about nothing."""
    import subprocess
    import sys

    code = ("import hcp_client.models as m; "
            "f = m.JsonSchemaFormat.model_validate({'name': 'x', 'schema': {'type': 'object'}}); "
            "assert f.schema_ == {'type': 'object'}, f; "
            "assert f.model_dump(by_alias=True, exclude_none=True)['schema'] == {'type': 'object'}")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
