"""Office documents: Word (.docx), PowerPoint (.pptx), OpenDocument text (.odt) and presentations (.odp).

Each is a zip of XML parts (``safezip``).  A paragraph is one segment: its text is the text of its
runs joined, translated whole.  Runs formatted apart from the rest of the paragraph (a bold word, a
link) are translated once more on their own and their translation is found in the paragraph's, so
that the formatting lands on the words that translate them (``inline``); the rest of the
translation goes to the other runs, and a run is added where the translation puts text that the
source has no run for ("<b>Red</b> cars" -> "Les voitures <b>rouges</b>").  A paragraph of one
formatting, or one whose formatted words are not found, has its translation spread over its runs
by their lengths (``base.spread``).  Everything else in the archive (styles, images,
relationships) is copied byte for byte.

* .docx: ``w:p`` paragraphs of the body, headers, footers, footnotes, endnotes and comments; the
  runs' ``w:t`` texts (a text box's paragraphs are paragraphs of their own); a run's formatting is
  its ``w:rPr`` (not its language or proofing marks) and the link it is in.
* .pptx: ``a:p`` paragraphs of the slides and their notes (not the layouts and masters: their
  prompt texts are not shown); the runs' ``a:t`` texts; a run's formatting is its ``a:rPr`` (not
  its language, spelling or editing marks).
* .odt: ``text:p`` and ``text:h`` of content.xml (and styles.xml: headers and footers); the text
  and tails of the paragraph's spans, links and fields (notes, frames and annotations hold
  paragraphs of their own); a text's formatting is the spans and links it is in.
* .odp: as .odt, the paragraphs of content.xml (the slides' frames and notes).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from lxml import etree

from rendition.model.documents.base import Document, InvalidDocument, Limits
from rendition.model.documents.inline import Paragraph, segments, with_regions
from rendition.model.documents.safezip import ZipContents, parse_xml, write_xml

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
DRAW = "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"


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


def _top(elem: etree._Element, paragraph: etree._Element) -> etree._Element:
    """The ancestor of ``elem`` (or itself) that is a child of ``paragraph``."""
    parent = elem.getparent()
    while parent is not None and parent is not paragraph:
        elem, parent = parent, parent.getparent()
    return elem


class ZipXmlDocument(Document):
    """A zip of XML parts whose paragraphs are segments (and their formatted words, ``inline``)."""

    what = "document"
    parts: re.Pattern
    mimetype: str | None = None

    def __init__(self, data: bytes, limits: Limits):
        self.zip = ZipContents(data, self.what, limits)
        names = self.zip.names()
        self.check(names)
        self.trees: dict[str, etree._ElementTree] = {}
        self.paragraphs: list[tuple[etree._Element, list[Slot], Paragraph]] = []
        for name in names:
            if self.parts.fullmatch(name):
                tree = parse_xml(self.zip.data[name], f"{self.what} part {name}")
                self.trees[name] = tree
                for p, slots in self.find_paragraphs(tree.getroot()):
                    if _paragraph_text(slots).strip():
                        para = Paragraph(tuple(s.get() for s in slots), tuple(self.style(s, p) for s in slots))
                        self.paragraphs.append((p, slots, para))
        self.segments = segments([para for _, _, para in self.paragraphs])

    def check(self, names: list[str]) -> None:
        raise NotImplementedError

    def find_paragraphs(self, root: etree._Element) -> list[tuple[etree._Element, list[Slot]]]:
        raise NotImplementedError

    def style(self, slot: Slot, paragraph: etree._Element) -> Hashable:
        """The formatting of a slot's text (equal keys: equal formatting)."""
        raise NotImplementedError

    def new_run(self, slots: Sequence[Slot], para: Paragraph, text: str) -> etree._Element | None:
        """A run of the paragraph's base formatting holding ``text``, to insert; ``None``: the
        format cannot make one (the translation is then spread over the runs)."""
        return None

    def on_set(self, slot: Slot) -> None:
        """Called for every slot written (e.g. to keep its spaces)."""

    @property
    def counted(self) -> Sequence[str]:
        return self.segments[: len(self.paragraphs)]

    def render(self, translations: Sequence[str | None]) -> bytes:
        if len(translations) != len(self.segments):
            raise ValueError(f"{len(translations)} translations for {len(self.segments)} segments")
        laid = with_regions([para for _, _, para in self.paragraphs], translations)
        for (p, slots, para), (t, regions) in zip(self.paragraphs, laid, strict=True):
            if t is None:
                continue
            texts, inserts = para.laid_out(t, regions, lambda ins: self.new_run(slots, para, ins.text))  # noqa: B023 (called at once)
            for slot, text in zip(slots, texts, strict=True):
                slot.set(text)
                self.on_set(slot)
            for ins, run in inserts:
                anchor = _top(slots[ins.slot].elem, p)
                if ins.before:
                    anchor.addprevious(run)
                else:
                    anchor.addnext(run)
        return self.zip.write({name: write_xml(tree) for name, tree in self.trees.items()})


def _run_style(
    run: etree._Element | None, props: str, noise: frozenset[str], noisy_attributes: frozenset[str] = frozenset()
) -> Hashable:
    """A run's formatting: its properties element's attributes and children, less the ``noise``
    (language, proofing and editing marks: not formatting)."""
    rpr = run.find(props) if run is not None else None
    if rpr is None:
        return ()
    attrs = tuple(sorted((k, v) for k, v in rpr.attrib.items() if etree.QName(k).localname not in noisy_attributes))
    children = tuple(
        sorted(etree.tostring(c) for c in rpr if isinstance(c.tag, str) and etree.QName(c).localname not in noise)
    )
    return attrs, children


def _clone_run(
    slots: Sequence[Slot], para: Paragraph, text: str, run_tag: str, text_tag: str, props: str
) -> etree._Element | None:
    """A copy of a base run's properties with ``text`` as its only text."""
    for slot, style in zip(slots, para.styles, strict=True):
        run = slot.elem.getparent()
        if style == para.base and run is not None and run.tag == run_tag:
            new = etree.Element(run_tag, nsmap=run.nsmap)
            rpr = run.find(props)
            if rpr is not None:
                new.append(copy.deepcopy(rpr))
            t = etree.SubElement(new, text_tag)
            t.text = text
            return new
    return None


class Docx(ZipXmlDocument):
    what = ".docx"
    parts = re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml")

    def check(self, names: list[str]) -> None:
        if "word/document.xml" not in names or "[Content_Types].xml" not in names:
            raise InvalidDocument("the file is not a .docx document (no word/document.xml in the archive)")

    def find_paragraphs(self, root: etree._Element) -> list[tuple[etree._Element, list[Slot]]]:
        out = []
        for p in root.iter(f"{{{W}}}p"):
            # the runs' texts whose nearest paragraph is this one (a text box holds its own)
            texts = [t for t in p.iter(f"{{{W}}}t") if next(t.iterancestors(f"{{{W}}}p")) is p]
            out.append((p, [Slot(t) for t in texts]))
        return out

    _NOISE = frozenset({"lang", "noProof", "webHidden"})

    def style(self, slot: Slot, paragraph: etree._Element) -> Hashable:
        run = slot.elem.getparent()
        links = tuple(
            (a.get(R_ID), a.get(f"{{{W}}}anchor"))
            for a in slot.elem.iterancestors(f"{{{W}}}hyperlink")
            if paragraph in a.iterancestors()
        )
        return links, _run_style(run, f"{{{W}}}rPr", self._NOISE)

    def new_run(self, slots: Sequence[Slot], para: Paragraph, text: str) -> etree._Element | None:
        run = _clone_run(slots, para, text, f"{{{W}}}r", f"{{{W}}}t", f"{{{W}}}rPr")
        if run is not None:
            run[-1].set(XML_SPACE, "preserve")
        return run

    def on_set(self, slot: Slot) -> None:
        slot.elem.set(XML_SPACE, "preserve")  # leading/trailing spaces of a run are kept


class Pptx(ZipXmlDocument):
    what = ".pptx"
    parts = re.compile(r"ppt/(slides/slide|notesSlides/notesSlide)\d+\.xml")

    def check(self, names: list[str]) -> None:
        if "ppt/presentation.xml" not in names or "[Content_Types].xml" not in names:
            raise InvalidDocument("the file is not a .pptx presentation (no ppt/presentation.xml in the archive)")

    def find_paragraphs(self, root: etree._Element) -> list[tuple[etree._Element, list[Slot]]]:
        return [(p, [Slot(t) for t in p.iterfind(f"{{{A}}}r/{{{A}}}t")]) for p in root.iter(f"{{{A}}}p")]

    _NOISY = frozenset({"lang", "altLang", "dirty", "err", "noProof", "smtClean", "smtId", "bmk"})

    def style(self, slot: Slot, paragraph: etree._Element) -> Hashable:
        return _run_style(slot.elem.getparent(), f"{{{A}}}rPr", frozenset(), self._NOISY)

    def new_run(self, slots: Sequence[Slot], para: Paragraph, text: str) -> etree._Element | None:
        return _clone_run(slots, para, text, f"{{{A}}}r", f"{{{A}}}t", f"{{{A}}}rPr")


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
    kind = "text document"
    parts = re.compile(r"content\.xml|styles\.xml")
    mimetype = "application/vnd.oasis.opendocument.text"

    def check(self, names: list[str]) -> None:
        if "content.xml" not in names or self.zip.data.get("mimetype", b"").strip() != str(self.mimetype).encode():
            raise InvalidDocument(f"the file is not an {self.what} {self.kind} (its mimetype member is not {self.mimetype})")

    def find_paragraphs(self, root: etree._Element) -> list[tuple[etree._Element, list[Slot]]]:
        out = []
        for p in root.iter(f"{{{TEXT}}}p", f"{{{TEXT}}}h"):
            slots: list[Slot] = []
            _odt_slots(p, slots)
            out.append((p, slots))
        return out

    def style(self, slot: Slot, paragraph: etree._Element) -> Hashable:
        """The spans and links the text is in, from the paragraph down."""
        chain = []
        elem = slot.elem.getparent() if slot.tail else slot.elem
        while elem is not None and elem is not paragraph:
            chain.append((elem.tag, elem.get(f"{{{TEXT}}}style-name"), elem.get(XLINK_HREF)))
            elem = elem.getparent()
        return tuple(reversed(chain))


class Odp(Odt):
    """An OpenDocument presentation: the ``text:p`` paragraphs of its slides and their notes, in
    content.xml (not the master pages' placeholder prompts)."""

    what = ".odp"
    kind = "presentation"
    parts = re.compile(r"content\.xml")
    mimetype = "application/vnd.oasis.opendocument.presentation"
