"""Whole-document translation: the formats, and the steps around the translator.

    doc = open_document(data, "guide.docx", Limits(), target="fr")
    doc.render(translate_segments(doc.segments, translate))   # -> the translated .docx

``open_document`` picks the format by extension (``FORMATS``) and refuses what does not parse as
that format or is over a limit (``DocumentError``).  ``prepare`` turns a document's segments into
the texts to send to the translator: each text once, without its outer whitespace, with its
placeholders replaced by stand-ins (``rendition.model.text.placeholders``), and only those with a letter in them;
``finish`` maps the translations back to one per segment (``None`` where a placeholder did not come
back: that segment stays as it was).  The texts in between go through the text pipeline
(``rendition.model.text.pipeline``), which the CLI and the service each run with their own decode
(``translate_segments`` runs the three steps with a synchronous translate).
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from rendition.model.documents.base import (
    Document,
    DocumentError,
    DocumentTooLarge,
    InvalidDocument,
    Limits,
    UnsupportedFormat,
)
from rendition.model.documents.epub import Epub
from rendition.model.documents.markdown import Markdown
from rendition.model.documents.office import Docx, Odp, Odt, Pptx
from rendition.model.documents.po import PoCatalog
from rendition.model.documents.textfiles import Html, PlainText, Subtitles
from rendition.model.text.placeholders import Protected, protect, restore

if TYPE_CHECKING:
    from rendition.model.text.language_id import Runs

__all__ = [
    "FORMATS",
    "Document",
    "DocumentError",
    "DocumentTooLarge",
    "InvalidDocument",
    "Limits",
    "Prepared",
    "UnsupportedFormat",
    "finish",
    "join_runs",
    "media_type",
    "open_document",
    "prepare",
    "translate_segments",
]

# extension -> (parser, media type)
FORMATS: dict[str, tuple[type[Document], str]] = {
    ".txt": (PlainText, "text/plain; charset=utf-8"),
    ".html": (Html, "text/html; charset=utf-8"),
    ".htm": (Html, "text/html; charset=utf-8"),
    ".docx": (Docx, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ".pptx": (Pptx, "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    ".odt": (Odt, "application/vnd.oasis.opendocument.text"),
    ".odp": (Odp, "application/vnd.oasis.opendocument.presentation"),
    ".epub": (Epub, "application/epub+zip"),
    ".po": (PoCatalog, "text/x-gettext-translation; charset=utf-8"),
    ".pot": (PoCatalog, "text/x-gettext-translation; charset=utf-8"),
    ".srt": (Subtitles, "application/x-subrip; charset=utf-8"),
    ".md": (Markdown, "text/markdown; charset=utf-8"),
    ".markdown": (Markdown, "text/markdown; charset=utf-8"),
}


def extension(filename: str) -> str:
    """The lower-case extension of ``filename``; ``UnsupportedFormat`` (naming the supported
    ones) when no format handles it."""
    ext = PurePath(filename).suffix.lower()
    if ext not in FORMATS:
        raise UnsupportedFormat(
            f"unsupported file type {ext or '(no extension)'!r}; supported: {', '.join(FORMATS)}"
        )
    return ext


def media_type(filename: str) -> str:
    return FORMATS[extension(filename)][1]


def open_document(
    data: bytes, filename: str, limits: Limits, target: str | None = None, retranslate: bool = False
) -> Document:
    """Parse ``data`` as the format of ``filename``'s extension.  ``target``: the language the
    document is translated into (a gettext template gets its plural rule); ``retranslate``:
    gettext entries already translated are translated again."""
    ext = extension(filename)
    cls = FORMATS[ext][0]
    try:
        if cls is PoCatalog:
            doc: Document = PoCatalog(data, limits, target=target, retranslate=retranslate)
        else:
            doc = cls(data, limits)  # type: ignore[call-arg]  # (every other format is built from (data, limits))
    except DocumentError:
        raise
    except (ValueError, LookupError, TypeError, AttributeError, RecursionError, OSError, zipfile.BadZipFile, zlib.error) as e:
        # whatever else a parsing library raises on a malformed file is the file's fault too
        raise InvalidDocument(f"the file could not be read as {ext}: {type(e).__name__}: {str(e)[:200]}") from None
    limits.check_segments(doc.counted)
    return doc


@dataclass(frozen=True)
class Prepared:
    """The texts to translate (``texts``), and how they map back to the segments."""

    texts: list[str]
    slots: list[tuple[int, str, str, Protected] | None]  # per segment: (text index, leading, trailing ws, protection)


def prepare(segments: Sequence[str], whole: bool = True) -> Prepared:
    """``whole``: a text with more placeholders than there are stand-ins is left untranslated
    (a catalog's, whose placeholders a program fills); else (``Document.placeholders_whole``
    false: HTML, Markdown) it goes to the translator as it is, and the text pipeline protects the
    placeholders sentence by sentence."""
    texts: list[str] = []
    index: dict[str, int] = {}
    slots: list[tuple[int, str, str, Protected] | None] = []
    for seg in segments:
        core = seg.strip()
        p = protect(core) if any(c.isalpha() for c in core) else None
        if p is None and not whole and any(c.isalpha() for c in core) and _each_sentence_protectable(core):
            p = Protected(core, {}, (), {}, core.count("%"))
        if p is None or not any(c.isalpha() for c in p.text):
            slots.append(None)
            continue
        if p.text not in index:
            index[p.text] = len(texts)
            texts.append(p.text)
        slots.append((index[p.text], seg[: len(seg) - len(seg.lstrip())], seg[len(seg.rstrip()) :], p))
    return Prepared(texts, slots)


def _each_sentence_protectable(text: str) -> bool:
    """Whether each sentence of ``text`` has no more placeholders of a kind than there are
    stand-ins: the text pipeline, which protects them sentence by sentence, keeps them all (a
    sentence it cannot protect goes to the translator with its placeholders bare, which garbles
    them and the words around them)."""
    from rendition.model.text.segment import split

    return all(protect(s) is not None for s in split(text, "en").sentences)  # (any language's stops will do)


def finish(prepared: Prepared, segments: Sequence[str], translations: Sequence[str | None]) -> list[str | None]:
    """One translation per segment: the segment itself where there was nothing to translate (no
    letter), ``None`` where its translation failed or lost a placeholder."""
    out: list[str | None] = []
    for seg, slot in zip(segments, prepared.slots, strict=True):
        if slot is None:
            core = seg.strip()
            out.append(seg if not any(c.isalpha() for c in core) else None)
            continue
        i, lead, trail, p = slot
        t = translations[i]
        restored = restore(p, t.strip()) if t is not None and t.strip() else None
        out.append(None if restored is None else lead + restored + trail)
    return out


def join_runs(runs: Runs, done: Mapping[str, Sequence[str | None]]) -> list[str | None]:
    """Each of ``prepare``'s texts from its runs' translations (``runs``: the texts cut into runs of
    one language each, ``rendition.model.text.language_id.Runs``; ``done``: per language, one
    translation per run) joined; ``None`` for a text one of whose runs was not translated."""
    out: list[str | None] = []
    for parts in runs.put_back(done):
        out.append(None if any(p is None for p in parts) else "".join(p for p in parts if p is not None))
    return out


def translate_segments(
    segments: Sequence[str], translate: Callable[[list[str]], list[str | None]], whole: bool = True
) -> list[str | None]:
    """``prepare``, ``translate`` (a list of texts -> their translations, ``None`` for one that
    could not be translated) and ``finish``."""
    prepared = prepare(segments, whole)
    return finish(prepared, segments, translate(prepared.texts) if prepared.texts else [])
