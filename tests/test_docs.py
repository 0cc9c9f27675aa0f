"""The README stays a five-minute start (≤ 20 KB) and every relative link in it and in
docs/ resolves: the file exists and, for a Markdown target, so does the #anchor."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens,
    repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", _FENCE.sub("", page.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def links(page: Path) -> list[str]:
    """Relative link targets of a Markdown page, outside code."""
    text = _CODE.sub("", _FENCE.sub("", page.read_text()))
    return [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_readme_is_at_most_20_kb() -> None:
    size = (ROOT / "README.md").stat().st_size
    assert size <= 20 * 1024, f"README.md is {size:,} bytes; move reference text to docs/"


def test_every_relative_link_resolves() -> None:
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_link_checker_sees_links_and_anchors(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    page.write_text(
        "# Tables at any width\n## `perflab cmd`: whole commands\n"
        "[x](b.md#y) `[not](a link)` [z](https://example.org)\n"
    )
    assert links(page) == ["b.md#y"]
    assert anchors(page) == {"tables-at-any-width", "perflab-cmd-whole-commands"}
