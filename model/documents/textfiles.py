"""Text formats: plain text (.txt), HTML (.html, .htm) and subtitles (.srt).

* .txt: paragraphs are separated by blank lines.  A paragraph wrapped over several lines (no line
  that starts a list item or is indented, lines of 40 characters or more, every line but the last
  at least 60% of the longest, and no break before a word that would have fitted) is translated
  as one text and wrapped again to its width; any other paragraph (verse, an address) line by line.
* .html: the visible text (not scripts, styles, templates, comments or preformatted text),
  paragraph by paragraph: the text between two block boundaries (a block element, a line break) is
  translated as one text; the words in inline markup (a link, bold, italic) are found in its
  translation and keep their markup, and inline code, keys, sample output and variables are not
  translated and keep their place in the sentence (``inline``); the markup as it was otherwise
  (parsed with Python's html.parser through BeautifulSoup).
* .srt: each subtitle's text (its lines joined), numbering and timing kept; a subtitle of several
  lines is split again into as many lines, at the spaces nearest to even lengths.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

import srt
from bs4 import BeautifulSoup, NavigableString, PageElement, Tag

from rendition.model.documents.base import Document, InvalidDocument, Limits, decode_text
from rendition.model.documents.inline import Paragraph, segments, with_regions

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


_SKIP_TAGS = frozenset({"script", "style", "template", "noscript", "pre"})
# elements that sit inside a line of text; any other element (and a line break) ends a paragraph
INLINE_TAGS = frozenset(
    {"a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em", "font", "i", "ins",
     "label", "mark", "q", "s", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "wbr", "img"}
)  # fmt: skip
# inline elements kept as they are, in their place in the translated sentence: code, keys, output, variables
FIXED_TAGS = frozenset({"code", "kbd", "samp", "var"})

Node = NavigableString | Tag  # a paragraph's text node, or a fixed element


def html_paragraphs(soup: BeautifulSoup) -> list[list[Node]]:
    """The visible text to translate, as paragraphs of text nodes and fixed elements (``FIXED_TAGS``,
    not translated): not comments, doctypes, scripts, styles, templates or preformatted text; a
    paragraph ends at every element but inline and fixed ones, and at a line break."""
    out: list[list[Node]] = []
    current: list[Node] = []

    def close() -> None:
        if any(type(n) is NavigableString and n.strip() for n in current):
            out.append(list(current))
        current.clear()

    stack: list[PageElement | None] = list(reversed(list(soup.children)))
    while stack:  # document order, without recursion (a deeply nested file is no reason to fail)
        node = stack.pop()
        if node is None:  # the end of a block element
            close()
        elif type(node) is NavigableString:
            current.append(node)
        elif isinstance(node, Tag):
            if node.name in FIXED_TAGS:
                current.append(node)
            elif node.name in INLINE_TAGS:
                stack += reversed(list(node.children))
            else:
                close()
                if node.name not in _SKIP_TAGS:
                    stack.append(None)
                    stack += reversed(list(node.children))
    close()
    return out


def _elements(node: Node) -> tuple[Tag, ...]:
    """The inline elements a text node is in (a fixed element: and itself), outermost first."""
    chain = [node] if isinstance(node, Tag) else []
    for parent in node.parents:
        if parent.name not in INLINE_TAGS:
            break
        chain.append(parent)
    return tuple(reversed(chain))


def _key(t: Tag) -> tuple:
    return t.name, tuple(sorted((k, str(v)) for k, v in t.attrs.items()))


def _style(node: Node) -> tuple:
    return tuple(_key(t) for t in _elements(node))


class Html(Document):
    """An HTML file (or LibreTranslate's ``format: "html"`` text): paragraphs of text nodes, the
    words in inline markup put back on their translation and inline code kept in its place
    (``inline``)."""

    placeholders_whole = False  # (a paragraph may hold more pieces of code than there are stand-ins)

    def __init__(self, data: bytes | str, limits: Limits | None = None, *, xml: bool = False, **_: object):
        """``xml``: an XHTML or other XML document (an EPUB's), parsed as XML (names' case and
        namespaces kept) and written back as XML."""
        text = data if isinstance(data, str) else decode_text(data, ".html")
        self.soup = BeautifulSoup(text, "xml" if xml else "html.parser")
        self.paragraphs: list[tuple[list[Node], Paragraph]] = []
        for nodes in html_paragraphs(self.soup):
            slots = tuple(n.get_text() if isinstance(n, Tag) else str(n) for n in nodes)
            fixed = frozenset(i for i, n in enumerate(nodes) if isinstance(n, Tag))
            self.paragraphs.append((nodes, Paragraph(slots, tuple(_style(n) for n in nodes), fixed)))
        self.segments = segments([para for _, para in self.paragraphs])

    @property
    def counted(self) -> Sequence[str]:
        return self.segments[: len(self.paragraphs)]

    def render(self, translations: Sequence[str | None]) -> bytes:
        return self.render_text(translations).encode("utf-8")

    def render_text(self, translations: Sequence[str | None]) -> str:
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        laid = with_regions([para for _, para in self.paragraphs], translations)
        for (nodes, para), (t, regions) in zip(self.paragraphs, laid, strict=True):
            if t is None:
                continue
            texts, inserts = para.laid_out(t, regions, lambda ins: self._anchor(nodes[ins.slot], para))  # noqa: B023 (called at once)
            for i, (node, text) in enumerate(zip(nodes, texts, strict=True)):
                if i not in para.held and text != para.slots[i]:
                    node.replace_with(NavigableString(text))
            for ins, anchor in inserts:
                (anchor.insert_before if ins.before else anchor.insert_after)(NavigableString(ins.text))
        return str(self.soup)

    @staticmethod
    def _anchor(node: Node, para: Paragraph) -> Tag | None:
        """Where base text goes next to a region's node or a fixed element: beside the outermost
        inline element that the base text is not in (``None``: not within the base's markup)."""
        chain, base = _elements(node), para.base
        assert isinstance(base, tuple)
        if tuple(_key(t) for t in chain[: len(base)]) != base or len(chain) <= len(base):
            return None
        return chain[len(base)]


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
