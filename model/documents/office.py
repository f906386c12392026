"""Office documents: Word (.docx), PowerPoint (.pptx) and OpenDocument text (.odt).

Each is a zip of XML parts (``safezip``).  A paragraph is one segment: its text is the text of its
runs joined, and its translation is spread back over the same runs (``base.spread``), so the
formatting of every run stays in place; a paragraph of one run keeps it whole.  Everything else in
the archive (styles, images, relationships) is copied byte for byte.

* .docx: ``w:p`` paragraphs of the body, headers, footers, footnotes, endnotes and comments; the
  runs' ``w:t`` texts (a text box's paragraphs are paragraphs of their own).
* .pptx: ``a:p`` paragraphs of the slides and their notes (not the layouts and masters: their
  prompt texts are not shown); the runs' ``a:t`` texts.
* .odt: ``text:p`` and ``text:h`` of content.xml (and styles.xml: headers and footers); the text
  and tails of the paragraph's spans, links and fields (notes, frames and annotations hold
  paragraphs of their own).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lxml import etree

from rendition.model.documents.base import Document, InvalidDocument, Limits, spread
from rendition.model.documents.safezip import ZipContents, parse_xml, write_xml

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


@dataclass
class Slot:
    """One piece of a paragraph's text: ``elem.text`` or ``elem.tail``."""

    elem: etree._Element
    tail: bool = False

    def get(self) -> str:
        return (self.elem.tail if self.tail else self.elem.text) or ""

    def set(self, value: str) -> None:
        if self.tail:
            self.elem.tail = value
        else:
            self.elem.text = value


def _paragraph_text(slots: Sequence[Slot]) -> str:
    return "".join(s.get() for s in slots)


def _fill(slots: Sequence[Slot], translation: str, on_set: Callable[[Slot], None] | None = None) -> None:
    """Spread a paragraph's translation over its slots, keeping the paragraph's outer whitespace."""
    original = _paragraph_text(slots)
    lead = original[: len(original) - len(original.lstrip())]
    trail = original[len(original.rstrip()) :]
    sizes = [len(s.get()) for s in slots]
    for slot, piece in zip(slots, spread(lead + translation.strip() + trail, sizes)):
        slot.set(piece)
        if on_set is not None:
            on_set(slot)


class ZipXmlDocument(Document):
    """A zip of XML parts whose paragraphs are segments."""

    what = "document"
    parts: re.Pattern
    mimetype: str | None = None

    def __init__(self, data: bytes, limits: Limits):
        self.zip = ZipContents(data, self.what, limits)
        names = self.zip.names()
        self.check(names)
        self.trees: dict[str, etree._ElementTree] = {}
        self.paragraphs: list[list[Slot]] = []
        for name in names:
            if self.parts.fullmatch(name):
                tree = parse_xml(self.zip.data[name], f"{self.what} part {name}")
                self.trees[name] = tree
                for slots in self.find_paragraphs(tree.getroot()):
                    if _paragraph_text(slots).strip():
                        self.paragraphs.append(slots)
        self.segments = [_paragraph_text(p).strip() for p in self.paragraphs]

    def check(self, names: list[str]) -> None:
        raise NotImplementedError

    def find_paragraphs(self, root: etree._Element) -> list[list[Slot]]:
        raise NotImplementedError

    def on_set(self, slot: Slot) -> None:
        """Called for every slot written (e.g. to keep its spaces)."""

    def render(self, translations: Sequence[str | None]) -> bytes:
        for slots, t in zip(self.paragraphs, translations, strict=True):
            if t is not None:
                _fill(slots, t, self.on_set)
        return self.zip.write({name: write_xml(tree) for name, tree in self.trees.items()})


class Docx(ZipXmlDocument):
    what = ".docx"
    parts = re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml")

    def check(self, names: list[str]) -> None:
        if "word/document.xml" not in names or "[Content_Types].xml" not in names:
            raise InvalidDocument("the file is not a .docx document (no word/document.xml in the archive)")

    def find_paragraphs(self, root: etree._Element) -> list[list[Slot]]:
        out = []
        for p in root.iter(f"{{{W}}}p"):
            # the runs' texts whose nearest paragraph is this one (a text box holds its own)
            texts = [t for t in p.iter(f"{{{W}}}t") if next(t.iterancestors(f"{{{W}}}p")) is p]
            out.append([Slot(t) for t in texts])
        return out

    def on_set(self, slot: Slot) -> None:
        slot.elem.set(XML_SPACE, "preserve")  # leading/trailing spaces of a run are kept


class Pptx(ZipXmlDocument):
    what = ".pptx"
    parts = re.compile(r"ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml")

    def check(self, names: list[str]) -> None:
        if "ppt/presentation.xml" not in names or "[Content_Types].xml" not in names:
            raise InvalidDocument("the file is not a .pptx presentation (no ppt/presentation.xml in the archive)")

    def find_paragraphs(self, root: etree._Element) -> list[list[Slot]]:
        return [[Slot(t) for t in p.iterfind(f"{{{A}}}r/{{{A}}}t")] for p in root.iter(f"{{{A}}}p")]


_ODT_OWN_PARAGRAPHS = {f"{{{TEXT}}}note", f"{{{DRAW}}}frame", f"{{{OFFICE}}}annotation", f"{{{TEXT}}}tracked-changes"}
_ODT_NO_TEXT = {f"{{{TEXT}}}s", f"{{{TEXT}}}tab", f"{{{TEXT}}}line-break", f"{{{TEXT}}}soft-page-break", f"{{{TEXT}}}bookmark"}


def _odt_slots(elem: etree._Element, out: list[Slot]) -> None:
    out.append(Slot(elem))
    for child in elem:
        if not isinstance(child.tag, str):  # a comment or processing instruction: only its tail is text
            pass
        elif child.tag in _ODT_OWN_PARAGRAPHS or child.tag in _ODT_NO_TEXT:
            pass
        else:
            _odt_slots(child, out)
        out.append(Slot(child, tail=True))


class Odt(ZipXmlDocument):
    what = ".odt"
    parts = re.compile(r"content\.xml|styles\.xml")

    def check(self, names: list[str]) -> None:
        mimetype = self.zip.data.get("mimetype", b"").strip()
        if "content.xml" not in names or mimetype != b"application/vnd.oasis.opendocument.text":
            raise InvalidDocument(
                "the file is not an .odt text document (its mimetype member is not application/vnd.oasis.opendocument.text)"
            )

    def find_paragraphs(self, root: etree._Element) -> list[list[Slot]]:
        out = []
        for p in root.iter(f"{{{TEXT}}}p", f"{{{TEXT}}}h"):
            slots: list[Slot] = []
            _odt_slots(p, slots)
            out.append(slots)
        return out
