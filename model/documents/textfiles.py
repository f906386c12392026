"""Text formats: plain text (.txt), HTML (.html, .htm) and subtitles (.srt).

* .txt: paragraphs are separated by blank lines.  A paragraph wrapped over several lines (no line
  that starts a list item or is indented, lines of 40 characters or more, every line but the last
  at least 60% of the longest, and no break before a word that would have fitted) is translated
  as one text and wrapped again to its width; any other paragraph (verse, an address) line by line.
* .html: the visible text nodes (not scripts, styles, templates, comments), the markup as it was
  (parsed with Python's html.parser through BeautifulSoup).
* .srt: each subtitle's text (its lines joined), numbering and timing kept; a subtitle of several
  lines is split again into as many lines, at the spaces nearest to even lengths.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

import srt
from bs4 import BeautifulSoup, NavigableString

from rendition.model.documents.base import Document, InvalidDocument, Limits, decode_text

_LIST_ITEM = re.compile(r"\s|[-*+•]\s|\d+[.)]\s|[A-Za-z][.)]\s")


_MIN_WRAP_WIDTH = 40  # narrower lines are verse, an address, a list: their breaks are the writer's


def _wrapped(lines: list[str]) -> bool:
    """Whether the lines are one paragraph wrapped at a width: no list item or indented line, lines
    at least ``_MIN_WRAP_WIDTH`` wide, none but the last short, and no break before a word that
    would have fitted on the line (a wrapper breaks only where the next word does not fit)."""
    if len(lines) < 2 or any(_LIST_ITEM.match(line) for line in lines):
        return False
    width = max(len(line.rstrip()) for line in lines)
    if width < _MIN_WRAP_WIDTH:
        return False
    for line, after in zip(lines, lines[1:]):
        if len(line.rstrip()) < 0.6 * width or len(line.rstrip()) + 1 + len(after.split()[0]) <= width:
            return False
    return True


class PlainText(Document):
    def __init__(self, data: bytes, limits: Limits, **_: object):
        text = decode_text(data, ".txt")
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.lines = text.replace("\r\n", "\n").split("\n")
        # a unit: (first line, line count, wrap width or 0 for a single line)
        self.units: list[tuple[int, int, int]] = []
        i = 0
        while i < len(self.lines):
            if not self.lines[i].strip():
                i += 1
                continue
            j = i
            while j < len(self.lines) and self.lines[j].strip():
                j += 1
            para = self.lines[i:j]
            if _wrapped(para):
                self.units.append((i, j - i, max(len(line) for line in para)))
            else:
                self.units += [(k, 1, 0) for k in range(i, j)]
            i = j
        self.segments = [" ".join(line.strip() for line in self.lines[a : a + n]) for a, n, _ in self.units]

    def render(self, translations: Sequence[str | None]) -> bytes:
        lines: list[str | None] = list(self.lines)
        for (a, n, width), t in zip(self.units, translations, strict=True):
            if t is None:
                continue
            if width:
                lines[a : a + n] = [textwrap.fill(t, width=width, break_long_words=False, break_on_hyphens=False)] + [None] * (n - 1)
            else:
                line = self.lines[a]
                lines[a] = line[: len(line) - len(line.lstrip())] + t + line[len(line.rstrip()) :]
        return "\n".join(x for x in lines if x is not None).replace("\n", self.newline).encode("utf-8")


_SKIP_TAGS = frozenset({"script", "style", "template", "noscript", "code", "pre"})


def text_nodes(soup: BeautifulSoup) -> list[NavigableString]:
    """The visible text to translate, one node at a time: not comments, doctypes, scripts, styles,
    templates, code or preformatted text (the HTML files and LibreTranslate's ``format: "html"``)."""
    return [
        n
        for n in soup.find_all(string=True)
        if type(n) is NavigableString and n.strip() and not any(p.name in _SKIP_TAGS for p in n.parents)
    ]


class Html(Document):
    def __init__(self, data: bytes, limits: Limits, **_: object):
        text = decode_text(data, ".html")
        self.soup = BeautifulSoup(text, "html.parser")
        self.nodes = text_nodes(self.soup)
        self.segments = [str(n).strip() for n in self.nodes]

    def render(self, translations: Sequence[str | None]) -> bytes:
        for node, t in zip(self.nodes, translations, strict=True):
            if t is not None:
                s = str(node)
                node.replace_with(NavigableString(s[: len(s) - len(s.lstrip())] + t + s[len(s.rstrip()) :]))
        return str(self.soup).encode("utf-8")


def split_lines(text: str, n: int) -> str:
    """``text`` on ``n`` lines, cut at the spaces nearest to equal lengths."""
    words = text.split(" ")
    if n < 2 or len(words) < n:
        return text
    out, rest = [], words
    for k in range(n, 1, -1):
        line_target = len(" ".join(rest)) / k
        best, length = 1, len(rest[0])
        for i in range(1, len(rest) - k + 1):
            if abs(length - line_target) <= abs(length + 1 + len(rest[i]) - line_target):
                break
            length += 1 + len(rest[i])
            best = i + 1
        out.append(" ".join(rest[:best]))
        rest = rest[best:]
    out.append(" ".join(rest))
    return "\n".join(out)


_BLANK_LINE_INSIDE = re.compile(r"\n[ \t\r]*\n")


class Subtitles(Document):
    def __init__(self, data: bytes, limits: Limits, **_: object):
        text = decode_text(data, ".srt")
        try:
            self.subs = list(srt.parse(text))
        except (srt.SRTParseError, ValueError) as e:
            raise InvalidDocument(f"the file is not valid SubRip (.srt) subtitles: {str(e)[:200]}") from None
        if not self.subs and text.strip():
            raise InvalidDocument("the file is not valid SubRip (.srt) subtitles: no subtitle found")
        for sub in self.subs:  # (srt reads on past a blank line to the next timing line; a player stops there)
            if _BLANK_LINE_INSIDE.search(sub.content.strip()):
                raise InvalidDocument(
                    f"the file is not valid SubRip (.srt) subtitles: subtitle {sub.index} (at {srt.timedelta_to_srt_timestamp(sub.start)}) "
                    "has a blank line inside its text, and the text after it has no number and timing line of its own"
                )
        self.segments = [" ".join(line.strip() for line in s.content.splitlines() if line.strip()) for s in self.subs]

    def render(self, translations: Sequence[str | None]) -> bytes:
        for sub, t in zip(self.subs, translations, strict=True):
            if t is not None:
                sub.content = split_lines(t, len([x for x in sub.content.splitlines() if x.strip()]))
        return srt.compose(self.subs, reindex=False).encode("utf-8")
