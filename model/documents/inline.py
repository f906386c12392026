"""Inline formatting inside a paragraph: a bold word, a link, an italic phrase.

A paragraph's text lies in slots (an HTML paragraph's text nodes, the runs of a .docx), each with
a style (its formatting).  The one every other is within (no markup), or else that of its first and
last words, or else that of most characters, is the paragraph's own, its *base*; a maximal sequence of slots in other
styles, with text in it, is a *region* ("The <b>red</b> car": one region, "red").  The paragraph is translated whole, so that word order and agreement are the
sentence's, and each region once more on its own; each region's translation is then looked for in
the paragraph's, in order: as the region was translated, as it was written (a name, a number) or
else as the closest window of words (difflib's ratio at least ``MIN_RATIO``).  The text between two
regions goes to the base slots between them:

    "The <b>red</b> car"  ->  "La voiture" + "rouge" + ""  ->  "La voiture <b>rouge</b>"

Where the translation puts text on either side of a region that has no base slot there ("<b>Red</b>
cars" -> "Les voitures <b>rouges</b>"), the arrangement asks the format to insert a piece of base
text next to the region (``Insert``).  A region that is not found takes its share of the text
around it by length, as the base slots beside it do; when none is found, the whole translation is
spread over the slots by their lengths (``base.spread``), as a paragraph without regions always is.
A fixed slot (HTML's inline code) is not translated: it goes through the translation as a
placeholder and takes the place where that comes back (fixed slots that only punctuation parts, a
list of options, as one placeholder).  The source's order of regions and fixed
slots is kept: one that the translation moves before another is treated as not found.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property
from typing import TypeVar

from rendition.model.documents.base import spread

MIN_RATIO = 0.7  # how close a window of the paragraph's translation must be to a region's own
MAX_REACH = 200  # words of the translation, after the region before, in which a region is looked for
_EDGE = " \t\r\n.,;:!?…\"'«»“”‘’„()[]{}¡¿"  # stripped from both ends of what is looked for
_SPACE = " \t\r\n"
_WORD = re.compile(r"\S+")
T = TypeVar("T")


@dataclass(frozen=True)
class Insert:
    """Base text to put next to slot ``slot``: before it (``before``) or after it."""

    slot: int
    before: bool
    text: str


@dataclass(frozen=True)
class Arrangement:
    """A paragraph's translation laid out: one text per slot, and the base texts to insert."""

    texts: list[str]
    inserts: list[Insert] = field(default_factory=list)


def _bounded(text: str, start: int, end: int, sides: tuple[bool, bool] = (True, True)) -> bool:
    left = not sides[0] or start == 0 or not text[start - 1].isalnum()
    return left and (not sides[1] or end == len(text) or not text[end].isalnum())


def find_words(
    text: str,
    needle: str,
    start: int = 0,
    edge: str = _EDGE,
    sides: tuple[bool, bool] = (True, True),
    near: int | None = None,
) -> tuple[int, int] | None:
    """Where ``needle`` (the ``edge`` characters stripped from its ends: spaces and punctuation)
    occurs in ``text`` at or after ``start`` as whole words, ignoring case (``sides``: whether a
    word must end there on the left and on the right): the first occurrence, or the one that
    starts nearest to ``near``."""
    n = needle.strip(edge)
    if not n:
        return None
    found = None
    for m in re.compile(re.escape(n), re.IGNORECASE).finditer(text, start):
        if _bounded(text, m.start(), m.end(), sides):
            if near is None:
                return m.start(), m.end()
            if found is None or abs(m.start() - near) < abs(found[0] - near):
                found = (m.start(), m.end())
    return found


def closest_words(
    text: str, needle: str, start: int = 0, min_ratio: float = MIN_RATIO, reach: int = MAX_REACH
) -> tuple[int, int] | None:
    """The window of whole words of ``text`` after ``start`` (among the next ``reach`` words) most
    like ``needle`` (difflib's ratio, ignoring case and outer punctuation; one word fewer to two
    more than it has), if at least ``min_ratio``; the first of equals."""
    key = needle.strip(_EDGE).lower()
    if not key:
        return None
    words = [(m.start() + start, m.end() + start) for m in _WORD.finditer(text[start:])][:reach]
    k = len(key.split())
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(key)  # (difflib caches what it learns of the second sequence)
    best: tuple[float, int, int] | None = None
    for size in range(max(1, k - 1), k + 3):
        for i in range(len(words) - size + 1):
            s, e = words[i][0], words[i + size - 1][1]
            while s < e and text[s] in _EDGE:
                s += 1
            while e > s and text[e - 1] in _EDGE:
                e -= 1
            if s == e:
                continue
            matcher.set_seq1(text[s:e].lower())
            floor = min_ratio if best is None else max(min_ratio, best[0])
            if matcher.real_quick_ratio() < floor or matcher.quick_ratio() < floor:
                continue
            ratio = matcher.ratio()
            if ratio >= floor and (best is None or ratio > best[0]):
                best = (ratio, s, e)
    return (best[1], best[2]) if best is not None else None


def segments(paragraphs: Sequence[Paragraph]) -> list[str]:
    """What a format translates for its paragraphs: their texts, then every paragraph's regions."""
    return [p.text for p in paragraphs] + [r for p in paragraphs for r in p.region_texts]


def with_regions(paragraphs: Sequence[Paragraph], translations: Sequence[str | None]) -> list[tuple[str | None, list[str | None]]]:
    """``segments``' translations (and any after them, ignored) back per paragraph: its own and
    its regions'."""
    own = iter(translations[len(paragraphs) :])
    return [(t, [next(own) for _ in p.regions]) for p, t in zip(paragraphs, translations, strict=False)]


@dataclass(frozen=True)
class Paragraph:
    """A paragraph's slot texts and their styles (any hashable key: equal keys, equal formatting).
    ``fixed``: the slots that are not translated (inline code); each stands in the paragraph's text
    as a placeholder (``{0}``, which the text pipeline keeps through translation) and keeps its
    place in the translation where that placeholder comes back."""

    slots: tuple[str, ...]
    styles: tuple[Hashable, ...]
    fixed: frozenset[int] = frozenset()

    @cached_property
    def groups(self) -> dict[int, int]:
        """The fixed slots as groups, first slot -> last + 1: fixed slots that only punctuation
        and spaces part ("`--a`, `--b` / `--c`") travel as one placeholder (there are five)."""
        out: dict[int, int] = {}
        start = end = -1
        for i in sorted(self.fixed):
            if start >= 0 and all(not any(c.isalnum() for c in self.slots[j]) and j not in self.fixed for j in range(end, i)):
                end = i + 1
                continue
            if start >= 0:
                out[start] = end
            start, end = i, i + 1
        if start >= 0:
            out[start] = end
        return out

    @cached_property
    def held(self) -> frozenset[int]:
        """The slots kept as they are: the fixed ones and what parts those of a group."""
        return frozenset(i for a, b in self.groups.items() for i in range(a, b))

    @cached_property
    def tokens(self) -> dict[int, str]:
        """Each group's placeholder (at its first slot): ``{k}``, for the first numbers the text
        does not hold."""
        joined, out = "".join(self.slots), {}
        k = 0
        for i in sorted(self.groups):
            while f"{{{k}}}" in joined:
                k += 1
            out[i] = f"{{{k}}}"
            k += 1
        return out

    @cached_property
    def source(self) -> list[str]:
        """Each slot as the translated text has it: a group's placeholder, its other slots empty."""
        return [self.tokens[i] if i in self.tokens else "" if i in self.held else s for i, s in enumerate(self.slots)]

    @cached_property
    def _offsets(self) -> list[int]:
        """Where each slot starts in ``source`` joined (and, last, its length)."""
        out = [0]
        for x in self.source:
            out.append(out[-1] + len(x))
        return out

    @cached_property
    def _joined(self) -> str:
        return "".join(self.source)

    @cached_property
    def text(self) -> str:
        """What is translated: the slots joined (a group of fixed ones as its placeholder), runs
        of white space made one space."""
        return " ".join(self._joined.split())

    @cached_property
    def base(self) -> Hashable:
        """The paragraph's own formatting: the one all others are within (a style that is a tuple
        starting every other one: no markup, in HTML and Markdown), else that of its first and last
        words when they share one ("Open **the file**."), else that of most characters."""
        size: dict[Hashable, int] = {}
        ends = []
        for i, (text, style) in enumerate(zip(self.slots, self.styles, strict=True)):
            if i not in self.held and text.strip():
                size[style] = size.get(style, 0) + len(text.strip())
                ends.append(style)
        outer = [st for st in size if isinstance(st, tuple) and all(isinstance(o, tuple) and o[: len(st)] == st for o in size)]
        if outer:  # the level every other style is within (HTML's, Markdown's: no markup)
            return min(outer, key=len)
        if ends and ends[0] == ends[-1]:
            return ends[0]
        return max(size, key=size.__getitem__) if size else None

    @cached_property
    def regions(self) -> list[tuple[int, int]]:
        """The regions, as [first, last + 1) slot ranges: maximal sequences of slots with text, in
        styles other than the base (white space between two of them joins them; a fixed slot ends one)."""
        out: list[tuple[int, int]] = []
        start: int | None = None
        end = 0
        for i, (text, style) in enumerate(zip(self.slots, self.styles, strict=True)):
            if style == self.base or i in self.held:
                if start is not None:
                    out.append((start, end))
                    start = None
            elif text.strip():
                start = i if start is None else start
                end = i + 1
        if start is not None:
            out.append((start, end))
        return out

    @cached_property
    def region_texts(self) -> list[str]:
        """What each region says, translated on its own to be found in the paragraph's translation."""
        return [" ".join("".join(self.slots[a:b]).split()) for a, b in self.regions]

    def _without_tokens(self, text: str, tokens: Sequence[str]) -> str:
        for token in tokens:
            text = text.replace(token, "")
        return re.sub(r"(?<=\S)  +(?=\S)", " ", text) if tokens else text

    def spread(self, translation: str) -> list[str]:
        """The translation cut over the slots by their lengths, the paragraph's outer white space
        kept (a fixed slot keeps its text and place, its placeholder taken out of the translation)."""
        original = "".join(self.slots)
        lead = original[: len(original) - len(original.lstrip())]
        trail = original[len(original.rstrip()) :]
        t = self._without_tokens(translation.strip(), list(self.tokens.values()))
        free = [i for i in range(len(self.slots)) if i not in self.held]
        out = list(self.slots)
        if not free:
            return out
        for i, piece in zip(free, spread(lead + t + trail, [len(self.slots[i]) for i in free]), strict=True):
            out[i] = piece
        return out

    def arrange(self, translation: str, regions: Sequence[str | None]) -> Arrangement:
        """The translation laid out over the slots, each region's translation (``regions``, in the
        order of ``region_texts``; ``None``: not translated) on its region and each fixed slot
        where its placeholder is.  A region that is not found takes its share of the text around
        it as base slots do (by length); when nothing is found, the whole translation is spread."""
        t = translation.strip()
        placed = self._placed(t, regions)
        if not placed:
            return Arrangement(self.spread(t))
        lost = [tok for i, tok in self.tokens.items() if (i, self.groups[i]) not in {r for r, _ in placed}]
        inside = {i for (a, b), _ in placed for i in range(a, b)}
        out = [("" if i in inside and i not in self.held else x) for i, x in enumerate(self.slots)]
        inserts: list[Insert] = []
        cuts = [0, *(x for _, w in placed for x in w), len(t)]  # gap k: t[cuts[2k]:cuts[2k + 1]]
        bounds = [0, *(x for r, _ in placed for x in r), len(self.slots)]
        for k in range(len(placed) + 1):
            gap = self._without_tokens(t[cuts[2 * k] : cuts[2 * k + 1]], lost)
            # the base slots between two placed regions, and those of regions not found
            takers = [
                i
                for i in range(bounds[2 * k], bounds[2 * k + 1])
                if i not in inside and i not in self.held and (self.styles[i] == self.base or self.slots[i].strip())
            ]
            for i in takers:
                out[i] = ""
            if takers:
                for i, piece in zip(takers, spread(gap, [len(self.slots[i]) for i in takers]), strict=True):
                    out[i] = piece
            elif gap.strip():  # text where the source has no base slot: the format puts one there
                before = k < len(placed)
                a, b = placed[k][0] if before else placed[k - 1][0]
                inserts.append(Insert(a if before else b - 1, before, gap))
            elif gap and k > 0 and placed[k - 1][0][0] not in self.groups:  # a space between two regions: the first's
                out[placed[k - 1][0][1] - 1] += gap
            elif gap and k < len(placed) and placed[k][0][0] not in self.groups:
                inserts.append(Insert(placed[k][0][0], True, gap))  # (a space after a fixed slot, before a region)
        for (a, b), (s, e) in placed:
            if a not in self.groups:
                sizes = [len(self.slots[i].strip()) for i in range(a, b)]
                for i, piece in zip(range(a, b), spread(t[s:e], sizes), strict=True):
                    out[i] = piece + out[i]  # (the last may hold the space before the next region)
        out = self._tidy(out)
        original = "".join(self.slots)
        lead, trail = original[: len(original) - len(original.lstrip())], original[len(original.rstrip()) :]
        had = [i for i, x in enumerate(self.slots) if x and i not in self.held]  # (where the outer spaces were)
        first, last = (had[0], had[-1]) if had else (0, len(out) - 1)
        if inserts and inserts[0].before and inserts[0].slot <= first:
            inserts[0] = Insert(inserts[0].slot, True, lead + inserts[0].text)
        elif first not in self.held:
            out[first] = lead + out[first]
        if inserts and not inserts[-1].before and inserts[-1].slot >= last:
            inserts[-1] = Insert(inserts[-1].slot, False, inserts[-1].text + trail)
        elif last not in self.held:
            out[last] += trail
        return Arrangement(out, inserts)

    def laid_out(
        self, translation: str, regions: Sequence[str | None], make: Callable[[Insert], T | None]
    ) -> tuple[list[str], list[tuple[Insert, T]]]:
        """``arrange``'s texts and its inserts, each with what the format ``make``s to hold it; where
        the format cannot make one (``None``), the translation spread over the slots and no inserts."""
        arranged = self.arrange(translation, regions)
        made = [make(ins) for ins in arranged.inserts]
        kept = [(ins, m) for ins, m in zip(arranged.inserts, made, strict=True) if m is not None]
        if len(kept) < len(made):
            return self.spread(translation), []
        return arranged.texts, kept

    def _tidy(self, texts: list[str]) -> list[str]:
        """A space that a cut left at the end of a formatted slot whose source text did not end in
        one (the last word of a link, of a bold phrase) moves to the start of the next slot with text."""
        out = list(texts)
        for i in range(len(out) - 1):
            stripped = out[i].rstrip()
            if (
                i in self.held
                or self.styles[i] == self.base
                or stripped == out[i]
                or not stripped
                or self.slots[i][-1:].isspace()
            ):
                continue
            j = next((j for j in range(i + 1, len(out)) if out[j] and j not in self.held), None)
            if j is not None:
                out[j] = out[i][len(stripped) :] + out[j]
                out[i] = stripped
        return out

    def _share(self, a: int) -> float:
        """How far into the paragraph's source slot ``a`` starts (0 to 1)."""
        return self._offsets[a] / max(1, self._offsets[-1])

    def _word_ends(self, a: int, b: int) -> tuple[bool, bool]:
        """Whether the source's region ``a:b`` begins and ends a word (not glued to its neighbours)."""
        text, start, end = self._joined, self._offsets[a], self._offsets[b]  # (a region holds no fixed slot)
        return (start == 0 or not (text[start - 1].isalnum() and text[start:start + 1].isalnum()),
                end == len(text) or not (text[end].isalnum() and text[end - 1:end].isalnum()))  # fmt: skip

    def _placed(self, t: str, regions: Sequence[str | None]) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """The regions and fixed slots found in ``t``, in slot order and in order in ``t``: (slot
        range, where in ``t``).  A region is looked for after the one before it; a fixed slot's
        placeholder must be there once."""
        out: list[tuple[tuple[int, int], tuple[int, int]]] = []
        pos = 0
        own = dict(zip(self.regions, zip(regions, self.region_texts, strict=True), strict=True))
        items = sorted([*self.regions, *self.groups.items()])
        for a, b in items:
            w: tuple[int, int] | None = None
            if a in self.groups:
                token = self.tokens[a]
                if t.count(token) == 1 and t.index(token) >= pos:
                    w = (t.index(token), t.index(token) + len(token))
            else:
                mine, source = own[(a, b)]
                if mine is not None and mine.strip():
                    sides = self._word_ends(a, b)  # (a region glued to a word: "3[link]")
                    near = round(len(t) * self._share(a))  # (of a phrase said twice, the one in the region's place)
                    w = (
                        find_words(t, mine, pos, _SPACE, sides, near)  # (with its punctuation: ".rs", "Attention :")
                        or find_words(t, mine, pos, _EDGE, sides, near)
                        or find_words(t, source, pos, _EDGE, sides, near)
                        or closest_words(t, mine, pos)
                    )
            if w is not None:
                out.append(((a, b), w))
                pos = w[1]
        return out
