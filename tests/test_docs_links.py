"""The README's and docs/'s links between themselves lead somewhere: every linked file exists and every
`#anchor` is the GitHub slug of one of its headings (a renamed heading otherwise breaks its links silently)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+\.md)(?:#([^)\s]+))?\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces -> hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))  # a `# comment` in a code block is no heading
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def links(path: Path) -> list[tuple[Path, str | None]]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [((path.parent / target).resolve(), anchor) for target, anchor in LINK.findall(text) if "://" not in target]


def test_slug_follows_github():
    assert slug("RRP on any graph: the portable path ranker shipped with kgdb (no LLM, nothing to train)") == \
        "rrp-on-any-graph-the-portable-path-ranker-shipped-with-kgdb-no-llm-nothing-to-train"
    assert slug("Loading at scale: the streamed `--bulk` path") == "loading-at-scale-the-streamed---bulk-path"
    assert slug("Answers that fit the question's words") == "answers-that-fit-the-questions-words"


def test_every_link_between_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked, broken = 0, []
    for page in pages:
        for target, anchor in links(page):
            checked += 1
            if not target.is_file():
                broken.append(f"{page.name}: {target.name} does not exist")
            elif anchor and anchor not in anchors(target):
                broken.append(f"{page.name}: #{anchor} is no heading of {target.name}")
    assert checked >= 20, f"only {checked} links found: the pattern no longer matches the pages"
    assert not broken, "\n".join(broken)
