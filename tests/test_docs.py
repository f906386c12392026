"""The documentation's links resolve, and it describes the project rather than its work log.

Every relative Markdown link (``[text](path)`` or ``[text](path#anchor)``) in README.md, docs/ and
the model cards must name a file or folder that exists, and an anchor must be a heading of the
target file (GitHub's slugs).  Images count as links.  Absolute URLs are not fetched.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "model" / "pretrained").glob("*/README.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def prose(text: str) -> str:
    """The text outside fenced code blocks (links inside them are not links)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"`|\*|\[|\]\([^)]*\)", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if not m:
            continue
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(prose(path.read_text()))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in links(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_slug_follows_github() -> None:
    assert slug("The service: `benchmarks/bench_serving.py`") == "the-service-benchmarksbench_servingpy"
    assert slug("Long texts: never cut short") == "long-texts-never-cut-short"
    assert slug("Serving engine: continuous batching (2026-11-23)") == "serving-engine-continuous-batching-2026-11-23"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_work_log_wording(doc: Path) -> None:
    """Docs speak of the project as it is: no session numbers, issue numbers or build-machine paths."""
    hits = [
        f"line {n}: {line.strip()[:80]}"
        for n, line in enumerate(doc.read_text().splitlines(), 1)
        if re.search(r"\bsessions?\b|\bissue [0-9]+|/work/", line, re.IGNORECASE)
    ]
    assert not hits, f"{doc.relative_to(ROOT)}: " + "; ".join(hits)


def contents_missing(text: str) -> list[str]:
    """The ``##``/``###`` headings that the contents (the links before the first ``##`` heading)
    do not link to."""
    body = prose(text)
    start = body.find("\n## ")
    listed = set(LINK.findall(body[:start])) if start >= 0 else set()
    headings = re.findall(r"^#{2,3}\s+(.*)$", body, re.MULTILINE)
    return [h for h in headings if f"#{slug(h)}" not in listed]


def test_the_contents_check_finds_a_missing_heading() -> None:
    text = "# T\n\n- [A](#a)\n\n## A\n\n### B c\n"
    assert contents_missing(text) == ["B c"]
    assert contents_missing(text.replace("- [A](#a)", "- [A](#a)\n  - [B c](#b-c)")) == []


def test_experiments_stay_short_and_every_entry_is_in_the_contents() -> None:
    """docs/experiments.md keeps one concise entry per experiment: at most 400 lines, and a table
    of contents at the top that links every section and entry."""
    text = (ROOT / "docs" / "experiments.md").read_text()
    assert len(text.splitlines()) <= 400, f"{len(text.splitlines())} lines"
    assert re.search(r"^## ", text, re.MULTILINE)
    missing = contents_missing(text)
    assert not missing, f"not in the contents: {missing}"


def test_every_image_in_docs_is_shown() -> None:
    """A figure under docs/ that no document shows is dead weight in the repository."""
    shown = {(doc.parent / t.partition("#")[0]).resolve() for doc in DOCS for t in links(doc)}
    text = " ".join(doc.read_text() for doc in DOCS)
    unused = [
        p.name for p in (ROOT / "docs").glob("*.png") if p.resolve() not in shown and f"docs/{p.name}" not in text
    ]
    assert not unused, f"images no document shows: {unused}"


MERMAID_NODE = re.compile(r'([A-Za-z_][\w]*)\s*(\[\[|\[\(|\(\(|\[|\(|\{)\s*"((?:[^"\\]|\\.)*)"\s*(\]\]|\)\]|\)\)|\]|\)|\})?')
CLOSING = {"[": "]", "(": ")", "{": "}", "[[": "]]", "[(": ")]", "((": "))"}


def mermaid_blocks(text: str) -> list[list[str]]:
    blocks, current = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None and stripped.startswith("```mermaid"):
            current = []
        elif current is not None and FENCE.match(stripped):
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(stripped)
    return blocks


def mermaid_errors(lines: list[str]) -> list[str]:
    """Quoted node labels whose shape is not closed (``A["label"`` without its ``]``), and lines
    whose quotes do not pair: the two mistakes that stop a flowchart from rendering."""
    errors = []
    for line in lines:
        if line.count('"') % 2:
            errors.append(f"unpaired quote: {line}")
        for m in MERMAID_NODE.finditer(line):
            if m.group(4) != CLOSING[m.group(2)]:
                errors.append(f"node {m.group(1)} opened with {m.group(2)!r} is not closed with {CLOSING[m.group(2)]!r}: {line}")
    return errors


def test_the_mermaid_check_finds_an_unclosed_node() -> None:
    assert mermaid_errors(['A["ok"] --> B["open"', 'C("x") --> D{"y"}']) == [
        "node B opened with '[' is not closed with ']': A[\"ok\"] --> B[\"open\"",
    ]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_mermaid_charts_are_well_formed(doc: Path) -> None:
    for block in mermaid_blocks(doc.read_text("utf-8")):
        assert block and block[0].split()[0] in ("flowchart", "graph", "sequenceDiagram", "stateDiagram-v2", "classDiagram"), block[:1]
        assert not mermaid_errors(block[1:])
