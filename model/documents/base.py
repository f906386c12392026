"""What every document format shares: the errors, the limits, the ``Document`` interface and the
spreading of a translated paragraph over its formatting runs.

A format parses a file into ``segments`` (the texts to translate, in document order) and renders
the file again from one translation per segment (``None``: keep that segment as it was).  Parsing
and rendering are pure functions of bytes: no model, no web framework.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


class DocumentError(ValueError):
    """A file that cannot be translated as sent (the service answers 400)."""


class UnsupportedFormat(DocumentError):
    """An extension no format handles."""


class InvalidDocument(DocumentError):
    """The content does not match the extension, or is malformed, or uses a forbidden construct
    (an XML entity declaration, a zip member outside the archive)."""


class DocumentTooLarge(DocumentError):
    """Over one of the ``Limits`` (the service answers 413); the message names the limit."""


@dataclass(frozen=True)
class Limits:
    """Caps on what a file may unpack to.  ``names`` are the settings that set them, quoted in
    the error messages (the service's ``RENDITION_*`` variables, the CLI's options)."""

    max_unpacked_bytes: int = 50_000_000  # total uncompressed size of a zip-based file's members
    max_members: int = 2_000  # members of a zip-based file
    max_segments: int = 20_000  # texts to translate in one file
    max_chars: int = 1_000_000  # characters to translate in one file
    names: tuple[str, str, str, str] = (
        "RENDITION_MAX_FILE_UNPACKED_BYTES",
        "RENDITION_MAX_FILE_MEMBERS",
        "RENDITION_MAX_FILE_SEGMENTS",
        "RENDITION_MAX_FILE_CHARS",
    )

    def check_segments(self, segments: Sequence[str]) -> None:
        if len(segments) > self.max_segments:
            raise DocumentTooLarge(
                f"the file has {len(segments):,} texts to translate; the limit is {self.max_segments:,} ({self.names[2]})"
            )
        chars = sum(len(s) for s in segments)
        if chars > self.max_chars:
            raise DocumentTooLarge(
                f"the file has {chars:,} characters to translate; the limit is {self.max_chars:,} ({self.names[3]})"
            )


class Document:
    """A parsed file: ``segments`` to translate and ``render`` to write it back."""

    segments: list[str]
    # a segment with more placeholders than there are stand-ins is left untranslated (a catalog's:
    # a program fills them); false: it is translated, its placeholders protected sentence by sentence
    placeholders_whole: bool = True

    @property
    def counted(self) -> Sequence[str]:
        """The segments the ``Limits`` count: the file's own texts (not the formatted words that a
        format translates a second time, ``inline``)."""
        return self.segments

    def render(self, translations: Sequence[str | None]) -> bytes:  # pragma: no cover (interface)
        raise NotImplementedError


Parser = Callable[[bytes, Limits], Document]


def decode_text(data: bytes, what: str) -> str:
    """UTF-8 (with or without a BOM) text; anything else is an ``InvalidDocument``."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidDocument(f"the {what} file is not UTF-8 text (invalid byte at offset {e.start})") from None
    if "\x00" in text:
        raise InvalidDocument(f"the {what} file contains NUL characters: it is not text")
    return text


_SPACE = re.compile(r"\s")


def spread(text: str, sizes: Sequence[int]) -> list[str]:
    """Cut ``text`` into ``len(sizes)`` consecutive pieces proportional to ``sizes`` (the lengths
    of a paragraph's original runs), each cut moved to the nearest following space so words stay
    whole within one run.  Runs that were empty stay empty; the pieces join back to ``text``."""
    total = sum(sizes)
    if len(sizes) == 1 or total == 0:
        return [text] + [""] * (len(sizes) - 1)
    pieces, start, seen = [], 0, 0
    for k, size in enumerate(sizes):
        seen += size
        if k == len(sizes) - 1:
            pieces.append(text[start:])
            break
        if size == 0:
            pieces.append("")
            continue
        end = max(start, round(len(text) * seen / total))
        m = _SPACE.search(text, end) if 0 < end < len(text) and not text[end - 1].isspace() else None
        end = m.start() + 1 if m else (end if end >= len(text) or text[end - 1].isspace() else len(text))
        pieces.append(text[start:end])
        start = end
    return pieces
