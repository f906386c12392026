"""Compiled gettext catalogs (``.mo``): the English ``msgid`` and its translation.

Untranslated and identical entries are skipped (fuzzy ones are not compiled into a ``.mo``);
plural entries give their singular form once; accelerators, markup and entities are stripped;
placeholders become the same stand-ins on both sides (``clean.fill_placeholders``).  Multi-line
entries (help texts) are paired paragraph by paragraph and sentence by sentence when both sides
split into the same number of pieces.  The domain (``wesnoth-httt``, ``gimp20``...) is kept so
that dialogue catalogs can be told from UI catalogs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import polib

from rendition.model.training.corpus.clean import fill_placeholders, looks_like_text, ratio_ok, strip_ui
from rendition.model.training.data import _SENT_SPLIT

_PARA = re.compile(r"\n\s*\n")


def catalogs(root: Path, lang: str) -> Iterator[Path]:
    for loc in (lang, f"{lang}_{lang.upper()}"):
        yield from sorted(root.glob(f"**/{loc}/LC_MESSAGES/*.mo"))


def _pieces(text: str) -> list[str]:
    out: list[str] = []
    for para in _PARA.split(text):
        para = " ".join(para.split())
        out.extend(s for s in _SENT_SPLIT.split(para) if s)
    return out


def entry_pairs(msgid: str, msgstr: str, lang: str) -> list[tuple[str, str]]:
    """Clean sentence pairs from one catalog entry (empty when it does not give any)."""
    filled = fill_placeholders(msgid, msgstr)
    if filled is None:
        return []
    src_raw, tgt_raw = filled
    es, xs = _pieces(src_raw), _pieces(tgt_raw)
    if len(es) != len(xs):
        es, xs = [" ".join(src_raw.split())], [" ".join(tgt_raw.split())]
    out = []
    for e, x in zip(es, xs):
        e, x = strip_ui(e, "en"), strip_ui(x, lang)
        if not e or not x or e.casefold() == x.casefold():
            continue
        if looks_like_text(e) and looks_like_text(x) and ratio_ok(e, x) and len(e) <= 400 and len(x) <= 400:
            out.append((e, x))
    return out


def read_catalog(path: Path, lang: str) -> Iterator[tuple[str, str]]:
    try:
        mo = polib.mofile(str(path))
    except (OSError, ValueError, UnicodeDecodeError):
        return
    for entry in mo:
        if entry.msgid_plural:
            msgstr = entry.msgstr_plural.get(0, "") if entry.msgstr_plural else ""
        else:
            msgstr = entry.msgstr
        if not entry.msgid or not msgstr or entry.msgid == msgstr:
            continue
        yield from entry_pairs(entry.msgid, msgstr, lang)
