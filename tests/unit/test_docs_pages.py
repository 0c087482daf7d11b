"""The conventions that make the pages testable (docs/development.md, "Docs as tests"):
each page says at its top what it assumes, shell is fenced as `bash` (so it is run), and a
block that is not run says why. tests/e2e/test_docs.py runs the rest."""

from __future__ import annotations

import re

import pytest

from tests.docs_pages import ASSUMES, KNOWN, ROOT, RUN, blocks_of, pages, read_page

PAGES = [read_page(p) for p in pages()]


@pytest.mark.parametrize("page", PAGES, ids=[p.path for p in PAGES])
def test_the_page_says_at_its_top_what_it_assumes(page) -> None:
    text = (ROOT / page.path).read_text()
    second = text.split("\n\n", 2)[1]
    assert second.startswith(ASSUMES), f"{page.path}: the paragraph under the title is not '{ASSUMES} …'"
    assert len(page.assumes) > len(ASSUMES) + 10


@pytest.mark.parametrize("page", PAGES, ids=[p.path for p in PAGES])
def test_every_block_is_run_or_says_why_not(page) -> None:
    for block in page.blocks:
        where = f"{page.path}:{block.line}"
        assert block.lang in KNOWN, f"{where}: fence ```{block.lang}: shell is fenced as bash"
        if block.skip_reason is not None:
            assert block.lang in RUN, f"{where}: only bash and python blocks are run"
            assert len(block.skip_reason) > 15, f"{where}: '# not run:' needs its reason"


def test_no_runnable_fence_hides_behind_an_indent() -> None:
    for path in pages():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            assert not re.match(r"\s+```(bash|python)\b", line), f"{path.name}:{number}"


def test_blocks_are_read_in_order_with_their_markers() -> None:
    text = ("# T\n\n> Assumes: x\n\n```bash\necho one\n```\n\ntext\n\n"
            "```python\n# not run: needs a GPU that no CI machine has\nprint(2)\n```\n\n```json\n{}\n```\n")
    found = blocks_of(text, "p.md")
    assert [(b.lang, b.line, b.runs) for b in found] == [("bash", 5, True), ("python", 11, False),
                                                         ("json", 16, False)]
    assert found[1].skip_reason == "needs a GPU that no CI machine has"


def test_most_of_the_blocks_run() -> None:
    runnable = sum(len(p.runnable) for p in PAGES)
    marked = sum(1 for p in PAGES for b in p.blocks if b.lang in RUN and not b.runs)
    assert runnable >= 35 and marked <= runnable // 3, (runnable, marked)


def test_the_packages_a_page_tells_users_to_pin_are_the_tested_ones() -> None:
    """A `pip install NAME==VERSION` in a page pins what requirements.lock pins (the
    versions CI runs the page's examples with)."""
    lock = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "requirements.lock").read_text(), re.M))
    lock = {name.lower().replace("_", "-"): version for name, version in lock.items()}
    pinned = [pin for path in pages() for block in read_page(path).blocks if block.lang == "bash"
              for pin in re.findall(r"([A-Za-z0-9_.-]+)==(\S+)", block.code)
              if "pip install" in block.code]
    assert pinned
    for name, version in pinned:
        assert lock.get(name.lower().replace("_", "-")) == version, (name, version)
