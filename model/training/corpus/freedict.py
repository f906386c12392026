"""FreeDict bilingual dictionaries (dictd format: ``.index`` + ``.dict.dz``): headword and its
translations, for vocabulary the other sources rarely hold (everyday nouns, verbs, adjectives).

An entry is a headword line (``word /pronunciation/ <pos>``) then its senses, numbered
(``1. ...``) or not, each a comma-separated list of translations; every translation of every
sense gives a pair (the first few only), always written English first.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

from rendition.model.training.corpus.offensive import is_offensive

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_HEAD = re.compile(r"^(?P<word>[^/<]+?)\s*(/[^/]*/)?\s*(<[^>]*>)?\s*$")
_SENSE = re.compile(r"^\s*\d+\.\s*")
_NOTE = re.compile(r"\([^)]*\)|\[[^\]]*\]|<[^>]*>")
# lines of the Ding-based dictionaries (eng-deu, deu-eng) that are not senses: cross-references
# ("see: {A major}", "Synonyms: {A}, {As}"), notes, and inflected examples ('"check-in halls"  - Abfertigungshallen')
_NOT_SENSE = re.compile(r'^\s*(?:see|Synonyms?|Note)\s*:|^\s*"[^"]*"\s+-\s')


def _b64(s: str) -> int:
    n = 0
    for c in s:
        n = n * 64 + _B64[c]
    return n


def entries(index: Path, data: Path) -> Iterator[tuple[str, list[str]]]:
    """(headword, translations) for each entry of a dictd dictionary."""
    body = gzip.open(data).read()
    for line in index.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) != 3 or parts[0].startswith("00database"):
            continue
        text = body[_b64(parts[1]) : _b64(parts[1]) + _b64(parts[2])].decode("utf-8", "replace")
        lines = [x for x in text.splitlines() if x.strip()]
        if not lines:
            continue
        m = _HEAD.match(lines[0])
        if not m:
            continue
        trans: list[str] = []
        for sense in lines[1:]:
            if _NOT_SENSE.match(sense):
                continue
            sense = _NOTE.sub("", _SENSE.sub("", sense))
            trans += [t.strip() for t in re.split(r"[,;]", sense) if t.strip()]
        yield m.group("word").strip(), trans


def read_dictionaries(root: Path, lang: str, per_word: int = 3) -> Iterator[tuple[str, str]]:
    """(English, translation) pairs from the eng-<lang> and <lang>-eng dictionaries under root,
    without the pairs ``offensive`` lists."""
    code = {"fr": "fra", "de": "deu"}[lang]
    for index in sorted(root.glob("**/usr/share/dictd/freedict-*.index")):
        pair = index.name.removeprefix("freedict-").removesuffix(".index")
        if pair not in (f"eng-{code}", f"{code}-eng"):
            continue
        english_first = pair.startswith("eng")
        for word, trans in entries(index, index.with_name(index.name.replace(".index", ".dict.dz"))):
            for t in trans[:per_word]:
                if len(t) <= 60 and len(word) <= 60 and t.casefold() != word.casefold():
                    en, other = (word, t) if english_first else (t, word)
                    if not is_offensive(en, "en") and not is_offensive(other, lang):
                        yield en, other
