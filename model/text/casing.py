"""Sentences written in capitals, translated in sentence case and given back in capitals.

The translator saw few sentences in capitals, and a word in capitals is spelt in pieces by the
tokenizer: "WARNING: DO NOT OPEN THE DOOR." gave "AVERTISSEMENT : NE NE PAS OUVER L'EU.", while
"Warning: do not open the door." gives "Attention : n'ouvre pas la porte.".  So a sentence in
capitals (``shouted``) goes to the translator in sentence case (``quiet``: small letters, with
capitals for its first letter, English "I" and the listed names, ``rendition.model.text.names``,
except one that is also a common word after a determiner: "JE M'APPELLE PIERRE" is "Je m'appelle
Pierre", "LA PIERRE" is "la pierre"), and its translation comes back in capitals (``loud``).  What the pipeline keeps as written (placeholders,
URLs, paths, code) is left as it was both ways.

A sentence counts as written in capitals when it has more capitals than small letters, no small
letter outside what is kept, and at least three words of two letters or more, or two with one of
five or more ("USER GUIDE", "I AM HUNGRY"): a line of acronyms ("USB HDMI", "NASA FBI") stays as
it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rendition.model.text import names, placeholders, spans
from rendition.model.translation.translator import Translation

_WORD = re.compile(r"[^\W\d_]+")
# the words after which a listed name that is also a common word is that word ("THE MARK", "LA PIERRE")
_DETERMINERS = frozenset(
    "the a an my your his her its our their this that these those some any no every each one "
    "le la les l un une des du de d mon ma mes ton ta tes son sa ses notre nos votre vos leur leurs ce cet cette ces".split()
)


def _kept(sentence: str, language: str | None) -> list[tuple[int, int]]:
    """The parts of ``sentence`` the pipeline keeps as written: its placeholders and spans."""
    found = [m.span() for m in placeholders.PLACEHOLDER.finditer(sentence)]
    return sorted(found + [s for s in spans.spans(sentence, language) if not any(a < s[1] and s[0] < b for a, b in found)])


def _outside(sentence: str, kept: list[tuple[int, int]]) -> list[str]:
    """The pieces of ``sentence`` around its kept parts (one more than there are kept parts)."""
    starts, ends = [0, *(b for _, b in kept)], [*(a for a, _ in kept), len(sentence)]
    return [sentence[a:b] for a, b in zip(starts, ends)]


def shouted(sentence: str, language: str | None = None) -> bool:
    """``sentence`` is written in capitals (module docstring)."""
    upper = sum(c.isupper() for c in sentence)
    if upper < 4 or sum(c.islower() for c in sentence) > upper:  # (most sentences: one pass)
        return False
    kept = _kept(sentence, language) if any(c.islower() for c in sentence) else []
    free = " ".join(_outside(sentence, kept))
    if any(c.islower() for c in free):
        return False
    words = [w for w in _WORD.findall(free) if len(w) >= 2]
    return len(words) >= 3 or (len(words) == 2 and max(map(len, words)) >= 5)


def quiet(sentence: str, language: str | None = None) -> tuple[str, list[str]]:
    """``sentence`` (written in capitals) in sentence case, and the kept parts left as they were."""
    kept = _kept(sentence, language)
    listed = names.known_names()
    first, before = True, ""  # (before: the word before, in small letters)

    def word(m: re.Match[str]) -> str:
        nonlocal first, before
        w = m.group(0)
        title = w[:1] + w[1:].lower()
        previous, before = before, w.lower()
        if first:
            first = False
            return title
        if w == "I" and language == "en":  # (the English pronoun, "I'm" and "I'll" included)
            return w
        if title in listed and (not names.common_word(title, language) or previous not in _DETERMINERS):
            return title  # a name ("JE M'APPELLE PIERRE", "À PARIS"), unless a determiner makes it a word ("LA PIERRE")
        return w.lower()

    originals = [sentence[a:b] for a, b in kept]
    out = []
    for i, piece in enumerate(_outside(sentence, kept)):
        if i:
            out.append(originals[i - 1])
            first = False
        out.append(_WORD.sub(word, piece))
    return "".join(out), originals


def loud(t: Translation, kept: Sequence[str]) -> Translation:
    """``t`` (every hypothesis) in capitals, the kept parts as they were."""

    def up(text: str) -> str:
        text = text.upper()
        for k in kept:
            if k.upper() != k:
                text = text.replace(k.upper(), k)
        return text

    return Translation(up(t.text), t.score, t.tokens, [(up(h), s) for h, s in t.hypotheses])
