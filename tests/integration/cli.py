"""Running the ``hcp`` command in-process, as a user would, for the CLI tests."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.main import app


def hcp(*args: str, code: int = 0) -> str:
    """Run ``hcp ARGS``, assert it exits with ``code`` and return what it printed."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.output
