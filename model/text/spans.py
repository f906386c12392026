"""The spans of a text that a translation must keep as they are: URLs, e-mail addresses, POSIX
and Windows paths, command lines in backticks, ``--options``, version numbers and identifiers in
code style (snake_case, CamelCase with inner capitals, dotted.names).

    marked = protect("Run `make all` in /srv/app.", STAND_INS)   # "Run X in Y."
    Glossary.restore(marked, "Lancez X dans Y.").text            # "Lancez `make all` dans /srv/app."

``protect`` gives each span a stand-in (``rendition.model.text.stand_ins``) the way a glossary term
gets one, the span itself being its "target term", so ``Glossary.restore`` puts it back verbatim
(appended in parentheses when the translation lost its stand-in).  A text without such a span is
left exactly as it was.
"""

from __future__ import annotations

import re

from rendition.model.text.glossary import Marked
from rendition.model.text.stand_ins import free, padding

_KINDS = {
    "backticks": r"`[^`\n]+`",
    "url": r"\b(?:https?|ftp)://[^\s<>\"'`]*[\w/#=&-]|\bwww\.[\w-]+(?:\.[\w-]+)+(?:/[^\s<>\"'`]*[\w/])?",
    "email": r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b",
    "winpath": r"\b[A-Za-z]:\\(?:[\w.$~-]+\\?)*|\\\\[\w.$-]+(?:\\[\w.$-]+)+",
    "path": r"(?<![\w./~<-])(?:~|\.{1,2})?/[\w.@%+-]+(?:/[\w.@%+-]+)*/?",
    "option": r"(?<![\w-])--[A-Za-z0-9][\w-]*(?:=[^\s,;]+)?",
    "version": r"\b[vV]?\d+(?:\.\d+){2,}(?:[-+~][\w.]+)?\b|\b[vV]\d+(?:\.\d+)+\b",
    "dotted": r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b",
    "snake": r"\b_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*\b",
    "camel": r"\b[A-Z]?[a-z]+[0-9]*(?:[A-Z][a-z0-9]*)+\b",
}
SPAN = re.compile("|".join(f"(?P<{k}>{v})" for k, v in _KINDS.items()))
_TRAILING = ".,;:!?)"  # sentence punctuation a path or URL does not end with


def _dotted_name(span: str) -> bool:
    """A dotted name, not an abbreviation ("e.g", "U.S"): a part of two characters or more."""
    return any(len(part) > 1 for part in span.split("."))


def spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each span of ``text`` to keep, in order."""
    out = []
    for m in SPAN.finditer(text):
        start, end = m.span()
        while end > start + 1 and text[end - 1] in _TRAILING and m.lastgroup in ("url", "path", "winpath", "option"):
            end -= 1
        if m.lastgroup == "dotted" and not _dotted_name(text[start:end]):
            continue
        out.append((start, end))
    return out


def protect(text: str, stand_ins: tuple[str, ...]) -> Marked:
    """``text`` with each span replaced by a free stand-in (``Marked.terms``: stand-in -> the span);
    spans beyond the free stand-ins stay as they are."""
    found = spans(text)
    unused = free(stand_ins, text)
    terms: dict[str, str] = {}
    out, last = [], 0
    for start, end in found[: len(unused)]:
        stand_in = unused.pop(0)
        terms[stand_in] = text[start:end]
        before, after = padding(text, start, end)
        out += [text[last:start], before, stand_in, after]
        last = end
    out.append(text[last:])
    return Marked("".join(out), terms) if terms else Marked(text)
