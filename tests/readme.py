"""The README's two set-up commands, read from the README itself, so that the tests run
exactly what a newcomer is told to run (tests/e2e/test_first_run.py) and a unit test can
hold `.ci/run` to the other one (tests/unit/test_readme_commands.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Two commands"
BASH_BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


def setup_commands(readme: Path = ROOT / "README.md") -> list[str]:
    """The commands of the bash blocks under the README's "Two commands" heading, in order."""
    text = readme.read_text()
    assert SECTION in text, f"README.md has no '{SECTION}' section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [_command(block) for block in BASH_BLOCK.findall(section)]


def _command(block: str) -> str:
    """The block without its comment lines (the docs tests' `# not run: …`)."""
    return "\n".join(line for line in block.strip().splitlines() if not line.startswith("#"))
