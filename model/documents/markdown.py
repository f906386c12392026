"""Markdown (.md, .markdown): the text of paragraphs, headings, list items, block quotes and table
cells, each translated whole with its inline markup put back on the words that translate it
(``inline``); everything that is not prose is kept as written.

Blocks, line by line (CommonMark's, simplified): front matter, fenced and indented code, link
reference definitions, thematic breaks and table delimiter rows are kept; an HTML block's text is
translated as an HTML file's (``textfiles.Html``), one without text stays as written; a heading's
``#`` marks, a list item's bullet or number (and task box), a quote's ``>`` are kept in front of
its translated text.  A paragraph wrapped over several lines at a width is wrapped again to it (a
wrapped line that would start a new block stays on the line before); a line that ends in a hard
break is a paragraph of its own.

Inline: code spans, images, autolinks, inline HTML and backslash escapes are not translated (they
go through the translation as placeholders and keep their place); emphasis (``*``, ``_``, ``**``,
``__``, ``~~``) and link texts (``[text](url)``, ``[text][ref]``) are regions whose markup goes
around the words that translate them: ``The **red** car`` -> ``La voiture **rouge**``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from rendition.model.documents.base import Document, Limits, decode_text
from rendition.model.documents.inline import Arrangement, Paragraph, segments, with_regions
from rendition.model.documents.textfiles import Html

# -- inline -------------------------------------------------------------------------------------

_FIXED = re.compile(
    r"\\[!-/:-@\[-`{-~]"  # a backslash escape
    r"|(?P<ticks>`+)(?:(?!(?P=ticks)).)+?(?P=ticks)(?!`)"  # a code span
    r"|!\[[^\]]*\](?:\([^()\s]*(?:\s+\"[^\"]*\")?\)|\[[^\]]*\])"  # an image
    r"|<(?:[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*|[^<>\s@]+@[^<>\s@]+)>"  # an autolink
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"  # inline HTML
)
_DELIMITER = re.compile(r"\*\*|__|~~|\*|_")


@dataclass
class Piece:
    """A piece of a paragraph's source: ``text`` (translated), ``markup`` (kept, around the text)
    or ``fixed`` (kept, in its place in the translation)."""

    kind: str
    text: str
    style: tuple = ()


def _link_end(text: str, start: int) -> tuple[int, int] | None:
    """For the ``[`` at ``start``: (where its ``]`` is, where the link's target ends), for an
    inline link ``[text](target)`` or a reference ``[text][ref]``; ``None`` for no link."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            m = _FIXED.match(text, i)
            i = m.end() if m else i + 1
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                break
        i += 1
    else:
        return None
    close = i
    if text.startswith("(", close + 1):
        depth, j = 0, close + 1
        while j < len(text):
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    return close, j + 1
            elif text[j] == "\\":
                j += 1
            j += 1
        return None
    m = re.compile(r"\[[^\[\]]*\]").match(text, close + 1)
    return (close, m.end()) if m else None


def inline_pieces(text: str) -> list[Piece]:
    """A paragraph's source as pieces, each text and fixed piece with its style: the links and
    the emphasis it is in, outermost first."""
    return _styled(_merged(_raw_pieces(text)))


def _raw_pieces(text: str) -> list[Piece]:
    """The pieces of ``text`` (a link's text: the same, inside its markup); an emphasis closer
    is marked ``("close",)``, a link's markup ``("link", target)`` and ``("end",)``."""
    pieces: list[Piece] = []
    buf: list[str] = []
    stack: list[tuple[str, int]] = []  # open emphasis: (delimiter, index of its piece)

    def flush() -> None:
        if buf:
            pieces.append(Piece("text", "".join(buf)))
            buf.clear()

    i = 0
    while i < len(text):
        m = _FIXED.match(text, i)
        if m:
            flush()
            pieces.append(Piece("fixed", m.group(0)))
            i = m.end()
            continue
        if text[i] == "[":
            end = _link_end(text, i)
            if end is not None:
                flush()
                close, stop = end
                pieces.append(Piece("markup", "[", ("link", text[close:stop])))
                pieces += _raw_pieces(text[i + 1 : close])
                pieces.append(Piece("markup", text[close:stop], ("end",)))
                i = stop
                continue
        d = _DELIMITER.match(text, i)
        if d:
            delim = d.group(0)
            before = text[i - 1] if i > 0 else " "
            after = text[d.end()] if d.end() < len(text) else " "
            opener_at = next((k for k in range(len(stack) - 1, -1, -1) if stack[k][0] == delim), None)
            closes = opener_at is not None and not before.isspace() and not (delim[0] == "_" and after.isalnum())
            opens = not after.isspace() and not (delim[0] == "_" and before.isalnum())
            if closes or opens:
                flush()
                pieces.append(Piece("markup", delim))
                if closes:
                    assert opener_at is not None
                    for _, k in stack[opener_at + 1 :]:  # opened inside it and never closed: plain text
                        pieces[k] = Piece("text", pieces[k].text)
                    del stack[opener_at:]
                    pieces[-1].style = ("close",)
                else:
                    stack.append((delim, len(pieces) - 1))
                i = d.end()
                continue
        buf.append(text[i])
        i += 1
    flush()
    for _, k in stack:  # never closed: plain text
        pieces[k] = Piece("text", pieces[k].text)
    return pieces


def _merged(pieces: list[Piece]) -> list[Piece]:
    out: list[Piece] = []
    for p in pieces:
        if out and p.kind == "text" and out[-1].kind == "text":
            out[-1] = Piece("text", out[-1].text + p.text)
        else:
            out.append(p)
    return out


def _styled(pieces: list[Piece]) -> list[Piece]:
    """Each text and fixed piece's style: the links and open emphasis it is in, outermost first."""
    open_: list[tuple[str, ...]] = []
    out = []
    for p in pieces:
        if p.kind != "markup":
            out.append(Piece(p.kind, p.text, tuple(x for entry in open_ for x in entry)))
            continue
        if p.style[:1] == ("link",):
            open_.append(p.style)
        elif p.style == ("end",):
            while open_ and open_.pop()[:1] != ("link",):
                pass
        elif p.style == ("close",) and (p.text,) in open_:
            del open_[len(open_) - 1 - open_[::-1].index((p.text,)) :]
        else:
            open_.append((p.text,))
        out.append(Piece("markup", p.text))
    return out


@dataclass
class InlineText:
    """A paragraph's inline pieces and its ``inline.Paragraph`` (its text and fixed pieces as slots)."""

    pieces: list[Piece]
    paragraph: Paragraph = field(init=False)
    where: list[int] = field(init=False)  # each slot's piece

    def __post_init__(self) -> None:
        self.where = [k for k, p in enumerate(self.pieces) if p.kind != "markup"]
        slots = tuple(self.pieces[k].text for k in self.where)
        styles = tuple(self.pieces[k].style for k in self.where)
        fixed = frozenset(i for i, k in enumerate(self.where) if self.pieces[k].kind == "fixed")
        self.paragraph = Paragraph(slots, styles, fixed)

    def render(self, arranged: Arrangement) -> str:
        out = [p.text for p in self.pieces]
        for i, k in enumerate(self.where):
            if self.pieces[k].kind == "text":
                out[k] = arranged.texts[i]
        before: dict[int, str] = {}
        after: dict[int, str] = {}
        for ins in arranged.inserts:  # beside the region's markup, not inside it
            k = self._outside(self.where[ins.slot], -1 if ins.before else 1)
            (before if ins.before else after)[k] = (before if ins.before else after).get(k, "") + ins.text
        self._hug(out, before, after)
        return "".join(before.get(k, "") + out[k] + after.get(k, "") for k in range(len(out)))

    def _outside(self, k: int, step: int) -> int:
        """The piece past the run of markup next to piece ``k`` (before it: ``step`` -1)."""
        while 0 <= k + step < len(self.pieces) and self.pieces[k + step].kind == "markup":
            k += step
        return k

    def _hug(self, out: list[str], before: dict[int, str], after: dict[int, str]) -> None:
        """Emphasis must hug its words ("** rouge**" is no emphasis): a text's leading spaces go
        before the markup that opens it, its trailing spaces after the markup that closes it."""
        slots = [k for k, p in enumerate(self.pieces) if p.kind != "markup"]
        for n, k in enumerate(slots):
            if self.pieces[k].kind != "text":
                continue
            style = self.pieces[k].style
            prev = self.pieces[slots[n - 1]].style if n > 0 else ()
            nxt = self.pieces[slots[n + 1]].style if n + 1 < len(slots) else ()
            lead = out[k][: len(out[k]) - len(out[k].lstrip())]
            if lead and out[k].strip() and len(style) > len(prev) and style[: len(prev)] == prev and k > 0 and self.pieces[k - 1].kind == "markup":
                out[k] = out[k][len(lead) :]
                m = self._outside(k, -1)
                before[m] = before.get(m, "") + lead
            trail = out[k][len(out[k].rstrip()) :]
            if trail and out[k].strip() and len(style) > len(nxt) and style[: len(nxt)] == nxt and k + 1 < len(self.pieces) and self.pieces[k + 1].kind == "markup":
                out[k] = out[k][: len(out[k]) - len(trail)]
                m = self._outside(k, 1)
                after[m] = trail + after.get(m, "")


# -- blocks -------------------------------------------------------------------------------------

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^( {0,3}#{1,6}(?:[ \t]+|$))(.*?)([ \t]+#+[ \t]*)?$")
_LIST = re.compile(r"^( {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]+\[[ xX]\])?[ \t]+)(\S.*)$")
_QUOTE = re.compile(r"^( {0,3}>[ \t]?)(.*)$")
_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*\S+")
_BLOCK_TAGS = (
    "address|article|aside|blockquote|body|center|details|dialog|dd|div|dl|dt|fieldset|figcaption|figure|footer|form|"
    "h[1-6]|head|header|hr|html|iframe|legend|li|main|menu|nav|ol|p|pre|script|section|style|summary|table|tbody|td|"
    "tfoot|th|thead|title|tr|ul|picture|video|audio|img"
)
# an HTML block: a comment, a block-level tag, or a line that is one tag alone (CommonMark's kinds 2, 6, 7)
_HTML_BLOCK = re.compile(
    rf"^ {{0,3}}(?:<!--|</?(?:{_BLOCK_TAGS})(?:[\s/>]|$)|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>\s*$)", re.IGNORECASE
)
_TABLE_DELIMITER = re.compile(r"^ {0,3}\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_STARTS_BLOCK = re.compile(r"^\s*(?:#|>|[-+*][ \t]|\d{1,9}[.)][ \t]|`{3}|~{3}|\||=+\s*$|<)")


@dataclass
class Unit:
    """Lines ``start:end`` of the file, translated as one text: its prefix (a heading's marks, a
    bullet) and suffix kept; ``wrap``: the width it was wrapped at (0: one line); ``cells``: a
    table row's cells, each a text of its own."""

    start: int
    end: int
    prefix: str
    text: str
    suffix: str = ""
    wrap: int = 0
    indent: str = ""  # the wrapped lines' own prefix


class Markdown(Document):
    """A Markdown file: its prose translated, block by block (see the module)."""

    placeholders_whole = False  # (a paragraph may hold more code spans than there are stand-ins)

    def __init__(self, data: bytes, limits: Limits | None = None, **_: object):
        text = decode_text(data, ".md")
        self.newline = "\r\n" if "\r\n" in text else "\n"
        self.lines = text.replace("\r\n", "\n").split("\n")
        self.units: list[Unit] = []
        self.rows: dict[int, list[str]] = {}  # a table row's line -> its cells' text (with their spaces)
        self.blocks: list[tuple[int, int, Html]] = []  # HTML blocks with text: (first line, end, document)
        self._read()
        texts = [InlineText(inline_pieces(u.text)) for u in self.units]
        keep = [k for k, t in enumerate(texts) if any(p.kind == "text" and p.text.strip() for p in t.pieces)]
        self.units, self.texts = [self.units[k] for k in keep], [texts[k] for k in keep]  # (code alone: kept)
        self.segments = segments([t.paragraph for t in self.texts])
        self.segments += [x for _, _, block in self.blocks for x in block.segments]

    @property
    def counted(self) -> Sequence[str]:
        return self.segments[: len(self.units)] + [x for _, _, block in self.blocks for x in block.counted]

    def _read(self) -> None:
        lines, i, in_list = self.lines, 0, False
        if lines and lines[0].strip() == "---":  # front matter
            end = next((k for k in range(1, len(lines)) if lines[k].strip() in ("---", "...")), None)
            i = end + 1 if end is not None else 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
                continue
            fence = _FENCE.match(line)
            if fence:
                mark = fence.group(1)
                i += 1
                while i < len(lines) and not (lines[i].lstrip().startswith(mark) and not lines[i].strip().strip(mark[0])):
                    i += 1
                i += 1
                in_list = False
                continue
            if re.match(r"^(?: {4}|\t)", line) and not in_list:  # indented code
                while i < len(lines) and (not lines[i].strip() or re.match(r"^(?: {4}|\t)", lines[i])):
                    i += 1
                continue
            if _REFERENCE.match(line) or _BREAK.match(line):
                i += 1
                in_list = False
                continue
            if _HTML_BLOCK.match(line):
                start = i
                while i < len(lines) and lines[i].strip():
                    i += 1
                block = Html("\n".join(lines[start:i]))
                if block.segments:  # (its text translated as an HTML file's; markup alone stays as written)
                    self.blocks.append((start, i, block))
                in_list = False
                continue
            if "|" in line and i + 1 < len(lines) and _TABLE_DELIMITER.match(lines[i + 1]) and "-" in lines[i + 1]:
                i = self._table(i)
                in_list = False
                continue
            heading = _HEADING.match(line)
            if heading:
                self.units.append(Unit(i, i + 1, heading.group(1), heading.group(2), heading.group(3) or ""))
                i += 1
                in_list = False
                continue
            item = _LIST.match(line) or _QUOTE.match(line)
            if item:
                in_list = bool(_LIST.match(line))
                i = self._paragraph(i, item.group(1), item.group(2))
                continue
            indent = re.match(r"^\s*", line).group(0)  # type: ignore[union-attr]  # (always matches)
            in_list = in_list and bool(indent)
            i = self._paragraph(i, indent, line[len(indent) :])

    def _paragraph(self, i: int, prefix: str, first: str) -> int:
        """The paragraph starting at line ``i`` (its first line's content ``first``): up to a blank
        line, a line that starts another block, or a hard line break."""
        lines, texts, j = self.lines, [first], i + 1
        while not re.search(r"(  |\\)$", lines[j - 1]) and j < len(lines) and lines[j].strip():
            nxt = lines[j]
            if _SETEXT.match(nxt) or _FENCE.match(nxt) or _HEADING.match(nxt) or _LIST.match(nxt) or _BREAK.match(nxt):
                break
            if _HTML_BLOCK.match(nxt) or (_QUOTE.match(nxt) and not prefix.lstrip().startswith(">")):
                break
            quote = _QUOTE.match(nxt)
            texts.append(quote.group(2) if quote and prefix.lstrip().startswith(">") else nxt.strip())
            j += 1
        hard = re.search(r"(  |\\)$", texts[-1])
        suffix = hard.group(1) if hard else ""
        texts[-1] = texts[-1][: len(texts[-1]) - len(suffix)] if suffix else texts[-1]
        width = 0
        widths = [len(prefix) + len(texts[0])] + [len(lines[k]) for k in range(i + 1, j)]
        if j - i > 1 and min(widths[:-1]) >= 40 and all(w + 1 + len(t.split()[0]) > max(widths) for w, t in zip(widths, texts[1:], strict=False)):
            width = max(widths)
        indent = re.match(r"^\s*(?:>\s?)?", lines[i + 1]).group(0) if j - i > 1 else ""  # type: ignore[union-attr]
        self.units.append(Unit(i, j, prefix, " ".join(t.strip() for t in texts), suffix, width, indent))
        if j < len(lines) and _SETEXT.match(lines[j]):
            j += 1  # (a setext heading's underline stays)
        return j

    def _table(self, i: int) -> int:
        """A table from its header row at line ``i``: each cell of every row but the delimiter row."""
        j = i
        while j < len(self.lines) and self.lines[j].strip() and "|" in self.lines[j]:
            if j != i + 1:
                cells = _cells(self.lines[j])
                self.rows[j] = cells
                for k, cell in enumerate(cells):
                    if cell.strip():
                        self.units.append(Unit(j, j + 1, f"cell {k}", cell.strip()))
            j += 1
        return j

    def render(self, translations: Sequence[str | None]) -> bytes:
        n = len(self.units)
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        laid = with_regions([t.paragraph for t in self.texts], translations)
        lines: list[str | None] = list(self.lines)
        at = n + sum(len(t.paragraph.regions) for t in self.texts)
        for start, end, block in self.blocks:
            lines[start:end] = [block.render_text(translations[at : at + len(block.segments)])] + [None] * (end - start - 1)
            at += len(block.segments)
        for unit, inline, (t, regions) in zip(self.units, self.texts, laid, strict=True):
            if t is None:
                continue
            new = inline.render(inline.paragraph.arrange(t, regions))
            if unit.prefix.startswith("cell "):
                cells = self.rows[unit.start]
                k = int(unit.prefix.split()[1])
                old = cells[k]
                cells[k] = old[: len(old) - len(old.lstrip())] + new + old[len(old.rstrip()) :]
                lines[unit.start] = _row(self.lines[unit.start], cells)
                continue
            out = [unit.prefix + new + unit.suffix]
            if unit.wrap:
                wrapped = textwrap.wrap(new, width=max(20, unit.wrap - len(unit.prefix)), break_long_words=False, break_on_hyphens=False)
                if len(wrapped) > 1 and not any(_STARTS_BLOCK.match(x) for x in wrapped[1:]):
                    out = [unit.prefix + wrapped[0]] + [unit.indent + x for x in wrapped[1:]]
                    out[-1] += unit.suffix
            lines[unit.start : unit.end] = ["\n".join(out)] + [None] * (unit.end - unit.start - 1)
        return "\n".join(x for x in lines if x is not None).replace("\n", self.newline).encode("utf-8")


def _cells(line: str) -> list[str]:
    """A table row's cells, with their spaces (a ``\\|`` is not a separator)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return re.split(r"(?<!\\)\|", body)


def _row(line: str, cells: list[str]) -> str:
    lead = line[: len(line) - len(line.lstrip())]
    stripped = line.strip()
    return lead + ("|" if stripped.startswith("|") else "") + "|".join(cells) + ("|" if stripped.endswith("|") else "")
