"""Sentence segmentation for translation, and the length limits that must never cut a text.

A text is split into lines (every line break kept as it was), each line into sentences with
``sentencex`` (Wikimedia's rule-based splitter, ~300 languages, about 150x faster than pysbd here;
see ``benchmarks/sentence_split.py``), and the translations are put back between the original
gaps, so spacing, line breaks and blank lines between paragraphs survive:

    doc = split("Hello there.  How are you?\\n\\nBye.", "en")
    doc.sentences   # ['Hello there.', 'How are you?', 'Bye.']
    doc.gaps        # ['', '  ', '\\n\\n', '']
    doc.join(["Salut.", "Ça va ?", "Au revoir."])   # 'Salut.  Ça va ?\\n\\nAu revoir.'

``InputTooLong`` is what the models raise instead of silently cutting an input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sentencex import segment

_LINE_BREAKS = re.compile(r"(\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])")


class InputTooLong(ValueError):
    """An input is longer than a model can take in one piece (nothing is cut silently)."""

    def __init__(self, index: int, length: int, limit: int, what: str = "input"):
        super().__init__(f"{what} {index} is {length} tokens long; the limit is {limit} tokens")
        self.index, self.length, self.limit, self.what = index, length, limit, what


@dataclass(frozen=True)
class Segmented:
    """``sentences[i]`` (no surrounding whitespace) sits between ``gaps[i]`` and ``gaps[i + 1]``;
    ``"".join(gaps[0], sentences[0], gaps[1], ...)`` is the original text."""

    sentences: list[str]
    gaps: list[str]

    def join(self, pieces: Sequence[str]) -> str:
        """The text with sentence i replaced by ``pieces[i]``."""
        if len(pieces) != len(self.sentences):
            raise ValueError(f"{len(pieces)} pieces for {len(self.sentences)} sentences")
        out = [self.gaps[0]]
        for piece, gap in zip(pieces, self.gaps[1:]):
            out += [piece, gap]
        return "".join(out)


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


def split(text: str, language: str) -> Segmented:
    """Split ``text`` into sentences (``language``: an ISO 639-1 code such as en, fr or de)."""
    sentences: list[str] = []
    gaps: list[str] = []
    gap_start = 0
    offset = 0
    for part in _LINE_BREAKS.split(text):
        if part and not _LINE_BREAKS.fullmatch(part):
            for start, end in _sentence_spans(part, language):
                gaps.append(text[gap_start : offset + start])
                sentences.append(part[start:end])
                gap_start = offset + end
        offset += len(part)
    gaps.append(text[gap_start:])
    return Segmented(sentences, gaps)
