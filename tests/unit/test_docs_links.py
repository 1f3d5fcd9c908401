"""The README and the documentation site hold together: every link between them leads to an existing page and
`#anchor`, no page names a development machine's paths or ports, every results row carries its provenance,
the CLI reference generates from the command line, and the version is one number everywhere.

`mkdocs build --strict` (.ci/docs) checks the site's links too; these tests run without MkDocs installed.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from support import ROOT

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+\.md)(?:#([^)\s]+))?\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
# A path or port of one development machine, or a label of how the work was organised, means nothing to a user.
FORBIDDEN = re.compile(r"[Ss]top [0-9]+|:77[0-9][0-9]|\.\./shared")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces -> hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))  # a `# comment` in a code block is no heading
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def links(path: Path) -> list[tuple[Path, str | None]]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [((path.parent / target).resolve(), anchor) for target, anchor in LINK.findall(text) if "://" not in target]


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


def test_slug_follows_github():
    assert (
        slug("RRP on any graph: the portable path ranker shipped with kgdb (no LLM, nothing to train)")
        == "rrp-on-any-graph-the-portable-path-ranker-shipped-with-kgdb-no-llm-nothing-to-train"
    )
    assert slug("Loading at scale: the streamed `--bulk` path") == "loading-at-scale-the-streamed---bulk-path"
    assert slug("Answers that fit the question's words") == "answers-that-fit-the-questions-words"


def test_every_link_between_readme_and_docs_resolves():
    checked, broken = 0, []
    for page in pages():
        for target, anchor in links(page):
            checked += 1
            name = page.relative_to(ROOT)
            if not target.is_file():
                broken.append(f"{name}: {target.relative_to(ROOT)} does not exist")
            elif anchor and anchor not in anchors(target):
                broken.append(f"{name}: #{anchor} is no heading of {target.relative_to(ROOT)}")
    assert checked >= 100, f"only {checked} links found: the pattern no longer matches the pages"
    assert not broken, "\n".join(broken)


def test_no_page_names_development_paths_ports_or_work_labels():
    hits = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for page in pages()
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert not hits, "\n".join(hits)


def test_readme_is_a_front_door_with_the_two_set_up_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    setup = (
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/kgdb neo4j start && "
        ".venv/bin/kgdb load freebase-subset && .venv/bin/kgdb status && "
        '.venv/bin/kgdb ask "What is the capital of France?"'
    )
    assert f"```bash\n{setup}\n```" in text
    assert "```bash\nbash .ci/run\n```" in text


def test_every_results_row_names_its_date_version_commit_machine_and_command():
    rows = [
        line
        for line in (DOCS / "results.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and not line.startswith("| result ") and not line.startswith("|---")
    ]
    assert len(rows) >= 15
    bad = []
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        _result, figure, date, version, machine, command = (cells + [""] * 6)[:6]
        if not (
            re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)
            and re.fullmatch(r"\d+\.\d+\.\d+, `[0-9a-f]{7,40}`", version)
            and machine
            and figure
            and command
        ):
            bad.append(row[:120])
    assert not bad, "rows without full provenance:\n" + "\n".join(bad)


def test_cli_reference_generates_a_section_per_command():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "hooks" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.cli_reference()
    for command in ("kgdb ask", "kgdb load freebase-subset", "kgdb eval retrieval", "kgdb neo4j start"):
        assert f"`{command}`" in text
    assert "| `--version` |" in text
    assert module.on_page_markdown(f"# CLI\n\n{module.MARKER}\n", None, None, None).count("\n## `kgdb`") == 1


def test_version_is_one_number_in_pyproject_package_and_cli():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    import kgdb

    assert kgdb.__version__ == declared, "reinstall (`pip install -e .`) after changing pyproject's version"
    out = subprocess.run([sys.executable, "-m", "kgdb", "--version"], capture_output=True, text=True, check=False)
    assert out.stdout.strip() == f"kgdb {declared}"
    assert (ROOT / "CHANGELOG.md").read_text(encoding="utf-8").count(f"## [{declared}]") == 1
