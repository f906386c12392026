"""GNOME help (Mallard ``.page`` files): English pages under ``usr/share/help/C/`` and their
translations under ``usr/share/help/<lang>/``, aligned by document structure.

Translated pages are generated from the English ones (itstool), so their block elements come in
the same order: titles, descriptions, paragraphs, list items, table cells.  A page is aligned
only when both sides have the same sequence of block tags; blocks then pair one to one and are
split further into sentences when both sides split into the same number of them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from rendition.model.training.corpus.clean import looks_like_text, normalise_text, ratio_ok
from rendition.model.training.data import _SENT_SPLIT

_SKIP = {"info", "code", "screen", "media", "credit", "license"}


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _text(el: ET.Element) -> str:
    """Inline text of a block; menu paths (``guiseq``) as ``A ▸ B``, key combos (``keyseq``) as ``Ctrl+S``."""
    tag = _local(el.tag)
    if tag in ("guiseq", "keyseq"):
        sep = " ▸ " if tag == "guiseq" else "+"
        return sep.join(_text(c).strip() for c in el) + (el.tail or "")
    return (el.text or "") + "".join(_text(c) for c in el) + (el.tail or "") if tag not in _SKIP else (el.tail or "")


def blocks(path: Path) -> list[tuple[str, str]]:
    """(tag, text) of the page's text blocks in document order, leaving out metadata and code."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return []
    out: list[tuple[str, str]] = []

    def walk(el: ET.Element) -> None:
        tag = _local(el.tag)
        if tag in _SKIP:
            return
        if tag in ("title", "desc", "p", "subtitle"):
            out.append((tag, normalise_text(_text(el).removesuffix(el.tail or ""))))
            return
        for child in el:
            walk(child)

    walk(root)
    return out


def page_pairs(en_page: Path, xx_page: Path) -> list[tuple[str, str]]:
    en, xx = blocks(en_page), blocks(xx_page)
    if not en or [t for t, _ in en] != [t for t, _ in xx]:
        return []
    out = []
    for (_, e), (_, x) in zip(en, xx):
        es, xs = _SENT_SPLIT.split(e), _SENT_SPLIT.split(x)
        if len(es) != len(xs):
            es, xs = [e], [x]
        for a, b in zip(es, xs):
            a, b = a.strip(), b.strip()
            if a and b and a != b and len(a) <= 400 and len(b) <= 400 and looks_like_text(a) and looks_like_text(b) and ratio_ok(a, b):
                out.append((a, b))
    return out


def read_help(root: Path, lang: str) -> Iterator[tuple[str, str, str]]:
    """(document, English, translation) for every aligned block of every help document under root."""
    for xx_dir in sorted(root.glob(f"**/usr/share/help/{lang}/*")):
        en_dir = xx_dir.parent.parent / "C" / xx_dir.name
        for xx_page in sorted(xx_dir.glob("**/*.page")):
            en_page = en_dir / xx_page.relative_to(xx_dir)
            if en_page.exists():
                for e, x in page_pairs(en_page, xx_page):
                    yield xx_dir.name, e, x
