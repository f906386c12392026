"""Sentence segmentation for translation, and the length limits that must never cut a text.

A text is split into lines (every line break kept as it was), each line into sentences with
``sentencex`` (Wikimedia's rule-based splitter, ~300 languages, about 150x faster than pysbd here;
see ``benchmarks/sentence_split.py``), and the translations are put back between the original
gaps, so spacing, line breaks and blank lines between paragraphs survive:

    doc = split("Hello there.  How are you?\\n\\nBye.", "en")
    doc.sentences   # ['Hello there.', 'How are you?', 'Bye.']
    doc.gaps        # ['', '  ', '\\n\\n', '']
    doc.join(["Salut.", "Ça va ?", "Au revoir."])   # 'Salut.  Ça va ?\\n\\nAu revoir.'

A sentence quoted inside a sentence is translated as a sentence of its own, its marks kept between
the parts as they were: '"Where are you?" she asked.' -> 'Where are you?' and 'she asked.', with
'"' and '" ' around them (``Segmented.gaps``).  The tokenizer spells a word glued to an opening
mark in letters ('"Where' is '"', 'W', 'her', 'e'), and the translator, which saw little quoted
speech, wrote '"Souvez-vous ?"'.  A passage counts as a quoted sentence when it opens with a capital
and ends with its own . ? ! or …, or with a comma (inside the marks or after them) before "he said",
"dit-il" and the like; a title in quotes ('the "Simple Mixer Interface"', '« Fichier - Exporter »,
sinon') stays part of its sentence.

``InputTooLong`` is what the models raise instead of silently cutting an input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sentencex import segment

from rendition.model.text.spans import spans

_LINE_BREAKS = re.compile(r"(\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])")


class InputTooLong(ValueError):
    """An input is longer than a model can take in one piece (nothing is cut silently)."""

    def __init__(self, index: int, length: int, limit: int, what: str = "input"):
        super().__init__(f"{what} {index} is {length} tokens long; the limit is {limit} tokens")
        self.index, self.length, self.limit, self.what = index, length, limit, what


@dataclass(frozen=True)
class Segmented:
    """``sentences[i]`` (no surrounding whitespace) sits between ``gaps[i]`` and ``gaps[i + 1]``;
    ``"".join(gaps[0], sentences[0], gaps[1], ...)`` is the original text.  ``continued``: the
    sentences that go on after a quoted one ('she asked.'): a translation that opens with a pronoun
    keeps its small letter there."""

    sentences: list[str]
    gaps: list[str]
    continued: frozenset[int] = frozenset()

    def join(self, pieces: Sequence[str]) -> str:
        """The text with sentence i replaced by ``pieces[i]``."""
        if len(pieces) != len(self.sentences):
            raise ValueError(f"{len(pieces)} pieces for {len(self.sentences)} sentences")
        out = [self.gaps[0]]
        for i, (piece, gap) in enumerate(zip(pieces, self.gaps[1:])):
            if i in self.continued and _PRONOUN.match(piece):  # ("Elle a demandé." after a quote; not "Paul")
                piece = piece[0].lower() + piece[1:]
            out += [piece, gap]
        return "".join(out)


_PRONOUN = re.compile(r"(?:He|She|It|We|You|They|There|Il|Elle|Ils|Elles|On|Nous|Vous|Je|J'|J’|Ce|C'|C’)(?![\w-])")
_CLOSE = {'"': '"', "“": "”", "«": "»", "„": "“", "‘": "’", "'": "'", "(": ")", "‹": "›"}
_OPENING = re.compile(r"""(?:^|(?<=[\s:—–-]))(["“«„‘'(‹])\s*(?=[^\W\d_])""")
_END = ".?!…"
_LEAD = re.compile(r"[\s,;:]*")
_SAID = re.compile(
    r"(?:(?:he|she|it|they|we|I|you|[A-Z]\w+)\s+)?(?:said|says|asked|asks|replied|replies|answered|shouted|cried|"
    r"whispered|added|explained)\b|\w+-(?:t-)?(?:il|elle|ils|elles|on|je|tu|nous|vous)\b|"
    r"(?:il|elle|ils|elles|on)\s+(?:a|avait|ont)\s+(?:dit|demandé|répondu|ajouté|crié)\b"
)


def _quoted(sentence: str, language: str) -> tuple[int, int, int, int] | None:
    """The first quoted sentence in ``sentence`` (module docstring): (opening mark, inner start,
    inner end, after the closing mark), or None.  Marks inside a span to keep (`echo "Hi there."`,
    ``rendition.model.text.spans``) are the span's."""
    kept: list[tuple[int, int]] | None = None
    for m in _OPENING.finditer(sentence):
        mark, start = m.group(1), m.end()
        if not sentence[start].isupper():
            continue
        close = _CLOSE[mark]
        at = start
        while (at := sentence.find(close, at + 1)) > 0:
            after = sentence[at + 1 : at + 2]
            if after.isalnum() or (after and close == "'" and sentence[at - 1].isalpha()):
                continue  # an apostrophe inside a word ("don't"), not the closing mark
            inner_end = len(sentence[:at].rstrip())
            rest = sentence[at + 1 :].lstrip()
            said = _SAID.match(rest.lstrip(", "))  # "he said", "dit-il", after a comma in or after the marks
            ends = sentence[inner_end - 1] in _END or (said and (sentence[inner_end - 1] == "," or rest[:1] == ","))
            if inner_end > start and ends and " " in sentence[start:inner_end]:
                kept = spans(sentence, language) if kept is None else kept
                if not any(a <= m.start() < b or a <= at < b for a, b in kept):
                    return m.start(), start, inner_end, at + 1
            break
    return None


def _carve(sentence: str, language: str) -> list[tuple[int, int, bool]]:
    """(start, end, continues after a quote) of the parts of one sentence to translate apart."""
    found = _quoted(sentence, language)
    if found is None:
        return [(0, len(sentence), False)]
    _, start, end, after = found
    parts: list[tuple[int, int, bool]] = []
    head = sentence[: found[0]].rstrip()
    if any(c.isalnum() for c in head):
        parts += [(a, b, c) for a, b, c in _carve(head, language)]
    if sentence[end - 1] == ",":  # (the comma before "he said" stays where it is, between the parts)
        end = len(sentence[: end - 1].rstrip())
    parts += [(start + a, start + b, False) for a, b in _sentence_spans(sentence[start:end], language)]
    tail = sentence[after:]
    lead = _LEAD.match(tail).end()  # type: ignore[union-attr]
    tail = tail[lead:].rstrip()
    if any(c.isalnum() for c in tail):
        rest = _carve(tail, language)
        small = tail[0].islower()  # 'she asked.', ', dit-il.'
        parts += [(after + lead + a, after + lead + b, c or (i == 0 and small)) for i, (a, b, c) in enumerate(rest)]
    return parts


def _sentence_spans(line: str, language: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of one line, whitespace excluded."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for sentence in segment(language, line):
        core = sentence.strip()
        if not core:
            continue
        start = line.find(core, pos)
        if start < 0:  # the splitter changed the text (it does not today): keep the rest whole
            rest = line[pos:]
            if rest.strip():
                lead = len(rest) - len(rest.lstrip())
                spans.append((pos + lead, pos + len(rest.rstrip())))
            return spans
        spans.append((start, start + len(core)))
        pos = start + len(core)
    tail = line[pos:]
    if tail.strip():  # anything the splitter dropped is kept as a sentence of its own
        lead = len(tail) - len(tail.lstrip())
        spans.append((pos + lead, pos + len(tail.rstrip())))
    return spans


def split(text: str, language: str, quotes: bool = True) -> Segmented:
    """Split ``text`` into sentences (``language``: an ISO 639-1 code such as en, fr or de);
    ``quotes``: a quoted sentence apart from the sentence around it (module docstring)."""
    sentences: list[str] = []
    gaps: list[str] = []
    continued: set[int] = set()
    gap_start = 0
    offset = 0
    for part in _LINE_BREAKS.split(text):
        if part and not _LINE_BREAKS.fullmatch(part):
            for start, end in _sentence_spans(part, language):
                pieces = _carve(part[start:end], language) if quotes else [(0, end - start, False)]
                for a, b, goes_on in pieces:
                    gaps.append(text[gap_start : offset + start + a])
                    if goes_on:
                        continued.add(len(sentences))
                    sentences.append(part[start + a : start + b])
                    gap_start = offset + start + b
        offset += len(part)
    gaps.append(text[gap_start:])
    return Segmented(sentences, gaps, frozenset(continued))
