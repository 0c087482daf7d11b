"""The pages as tests: every fenced ``bash`` and ``python`` block of README.md and docs/*.md,
in page order, with what the page says at its top that it assumes (docs/development.md,
"Docs as tests").

A block is left out only when its first line says so, visibly, with the reason:

    # not run: <why>

Which world a page runs in comes from its ``> Assumes:`` paragraph, right under its title:
"the demo's data (`hcp demo --model tiny`" means the demo's data in the working directory;
"the services (`scripts/services.sh up`" means the services stack as well; otherwise a
checkout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ("bash", "python")
# Languages a page may fence: shell goes in `bash` so that it is run (or says why not).
KNOWN = {*RUN, "json", "toml", "cel", "text", ""}
NOT_RUN = re.compile(r"#\s*not run:\s*(?P<reason>.*)")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
ASSUMES = "> Assumes:"
DEMO = "the demo's data (`hcp demo --model tiny`"
SERVICES = "the services (`scripts/services.sh up`"


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str
    code: str
    skip_reason: str | None  # why it is not run, from its first line; None when it runs

    @property
    def runs(self) -> bool:
        return self.lang in RUN and self.skip_reason is None


@dataclass(frozen=True)
class Page:
    path: str
    assumes: str  # the page's own words
    blocks: tuple[Block, ...]

    @property
    def world(self) -> str:
        """'demo', 'services' or 'checkout' (see the module doc)."""
        if DEMO in self.assumes:
            return "demo"
        return "services" if SERVICES in self.assumes else "checkout"

    @property
    def runnable(self) -> list[Block]:
        return [block for block in self.blocks if block.runs]


def pages(root: Path = ROOT) -> list[Path]:
    """README.md, then every page of docs/, by name."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def read_page(path: Path, root: Path = ROOT) -> Page:
    text = path.read_text()
    name = str(path.relative_to(root))
    return Page(name, assumes_line(text), tuple(blocks_of(text, name)))


def assumes_line(text: str) -> str:
    """The page's ``> Assumes:`` paragraph (a blockquote, possibly over several lines) among
    its first lines, or '' when it has none."""
    head = text.split("\n## ", 1)[0].splitlines()[:12]
    for i, line in enumerate(head):
        if line.startswith(ASSUMES):
            quoted = [line]
            quoted += [more for more in head[i + 1:] if more.startswith(">")]
            return " ".join(q.lstrip("> ").strip() for q in quoted)
    return ""


def blocks_of(text: str, page: str) -> list[Block]:
    found = []
    for match in FENCE.finditer(text):
        code = match["code"]
        first = code.lstrip("\n").split("\n", 1)[0].strip()
        marker = NOT_RUN.fullmatch(first)
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page, line, match["lang"], code,
                           marker["reason"].strip() if marker else None))
    return found
