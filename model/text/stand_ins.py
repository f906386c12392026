"""The stand-ins: the words the translator learned to copy through a translation unchanged.

The gettext part of the training corpus has its placeholders replaced by these on both sides
(``rendition.model.training.corpus.clean.fill_placeholders``): the letters for string conversions,
the numbers for integer ones, each kind in this order.  Everything that must come out of a
translation as it went in (glossary terms, placeholders, URLs, paths, code) is replaced by one of
them before translation and put back after it (``glossary``, ``placeholders``, ``spans``); a
person's name in English, by a first name of its gender (``PERSONS``).
"""

from __future__ import annotations

import re
from functools import lru_cache

FILLERS: tuple[str, ...] = ("X", "Y", "Z", "W", "V")
NUMBERS: tuple[str, ...] = ("3", "7", "12", "25", "40")
STAND_INS: tuple[str, ...] = FILLERS + NUMBERS  # in the order they are used: the letters first
# A person's name in an English sentence stands in as a first name of the same gender that the
# translator copies unchanged: a letter hides that the name is a person's, and whose ("Sophie
# doesn't work." -> "X ne fonctionne pas."; "Does Sarah buy bread?" -> "X achète-t-il du pain ?").
PERSONS: dict[str, tuple[str, ...]] = {"f": ("Anna", "Lisa", "Sarah"), "m": ("Paul", "Marc", "David")}


@lru_cache(maxsize=256)
def word(token: str) -> re.Pattern[str]:
    """``token`` as a word of its own (no letter, digit or underscore on either side)."""
    return re.compile(r"(?<!\w)" + re.escape(token) + r"(?!\w)")


def free(stand_ins: tuple[str, ...], text: str) -> list[str]:
    """The stand-ins that ``text`` does not already hold as words, in order."""
    return [s for s in stand_ins if not word(s).search(text)]


def padding(text: str, start: int, end: int) -> tuple[str, str]:
    """The spaces that keep a stand-in put at ``text[start:end]`` a word of its own."""
    before = " " if start > 0 and text[start - 1].isalnum() else ""
    after = " " if end < len(text) and text[end].isalnum() else ""
    return before, after
