"""The documentation's own links: every relative link in README.md and docs/ names a file that
exists, and every #anchor a heading of that file (GitHub's anchor rule)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.survival import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    out = set()
    for line in page.read_text().splitlines():
        if line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    text = re.sub(r"`[^`\n]*`", "", page.read_text())       # code spans hold no links (N[f](x))
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue                      # http(s), mailto: not checked here
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.relative_to(ROOT)}: {target} does not exist"
        if anchor:
            assert resolved.is_file() and anchor in anchors(resolved), f"{page.relative_to(ROOT)}: no #{anchor}"
