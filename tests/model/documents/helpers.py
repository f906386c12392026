"""Real documents built with the libraries that write them (python-docx, python-pptx, odfpy), and
GNU gettext's ``msgfmt --check``."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import docx
import pptx
import pytest
from odf.opendocument import OpenDocumentText
from odf.style import Style, TextProperties
from odf.text import H, P, Span


def make_docx(paragraphs: list[list[tuple[str, bool]]], header: str | None = None) -> bytes:
    """One paragraph per list of (run text, bold) runs."""
    d = docx.Document()
    for runs in paragraphs:
        p = d.add_paragraph()
        for text, bold in runs:
            p.add_run(text).bold = bold
    if header is not None:
        d.sections[0].header.paragraphs[0].text = header
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def read_docx(data: bytes) -> list[list[tuple[str, bool | None]]]:
    return [[(r.text, r.bold) for r in p.runs] for p in docx.Document(io.BytesIO(data)).paragraphs]


def make_pptx(title: str, bullets: list[list[tuple[str, bool]]]) -> bytes:
    pr = pptx.Presentation()
    slide = pr.slides.add_slide(pr.slide_layouts[1])
    slide.shapes.title.text = title
    frame = slide.placeholders[1].text_frame
    for i, runs in enumerate(bullets):
        p = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        for text, italic in runs:
            r = p.add_run()
            r.text = text
            r.font.italic = italic
    out = io.BytesIO()
    pr.save(out)
    return out.getvalue()


def read_pptx(data: bytes) -> list[list[tuple[str, bool | None]]]:
    pr = pptx.Presentation(io.BytesIO(data))
    return [
        [(r.text, r.font.italic) for r in p.runs]
        for shape in pr.slides[0].shapes
        for p in shape.text_frame.paragraphs
    ]


def make_odt(heading: str, parts: list[tuple[str, bool]]) -> bytes:
    """A heading and one paragraph whose parts are plain text or bold spans."""
    doc = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    doc.automaticstyles.addElement(bold)
    doc.text.addElement(H(outlinelevel=1, text=heading))
    p = P()
    for text, is_bold in parts:
        if is_bold:
            p.addElement(Span(stylename=bold, text=text))
        else:
            p.addText(text)
    doc.text.addElement(p)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def read_odt(data: bytes, headings: bool = True) -> list[str]:
    """The headings' and paragraphs' texts, as odfpy reads them."""
    from odf import teletype
    from odf.opendocument import load

    doc = load(io.BytesIO(data))
    return [teletype.extractText(x) for x in (doc.getElementsByType(H) if headings else []) + doc.getElementsByType(P)]


def replace_member(data: bytes, name: str, body: bytes) -> bytes:
    """The zip with one member's content replaced."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for info in src.infolist():
            z.writestr(info, body if info.filename == name else src.read(info))
    return out.getvalue()


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"""


def zip_bomb(name: str, size: int, extra: dict[str, bytes] | None = None) -> bytes:
    """A zip whose member ``name`` is ``size`` zero bytes (deflated to about a thousandth)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in (extra or {}).items():
            z.writestr(k, v)
        with z.open(name, "w", force_zip64=True) as f:
            chunk = b"\0" * (1 << 20)
            for _ in range(size >> 20):
                f.write(chunk)
    return out.getvalue()


def lying_zip(name: str, body: bytes, declared: int) -> bytes:
    """A zip whose headers say member ``name`` is ``declared`` bytes while it inflates to ``body``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, body)
    raw = bytearray(out.getvalue())
    size = len(body).to_bytes(4, "little")
    fake = declared.to_bytes(4, "little")
    # the uncompressed size in the local header (offset 22) and the central directory entry (offset 24)
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    assert raw[local + 22 : local + 26] == size and raw[central + 24 : central + 28] == size
    raw[local + 22 : local + 26] = fake
    raw[central + 24 : central + 28] = fake
    return bytes(raw)


def msgfmt_check(path: Path) -> subprocess.CompletedProcess:
    """``msgfmt --check`` on a catalog (skipped where GNU gettext is not installed, a failure in CI:
    scripts/test.sh installs it)."""
    exe = shutil.which("msgfmt")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("msgfmt (GNU gettext) is not installed; scripts/test.sh installs it")
        pytest.skip("msgfmt (GNU gettext) is not installed")
    return subprocess.run([exe, "--check", "-o", os.devnull, str(path)], capture_output=True, text=True, timeout=60)


def make_odp(slides: list[tuple[str, list[tuple[str, bool]]]]) -> bytes:
    """Slides of a title frame and a text frame whose parts are plain text or bold spans, each
    with speaker notes ("Notes: " and the title)."""
    from odf.draw import Frame, Page, TextBox
    from odf.opendocument import OpenDocumentPresentation
    from odf.presentation import Notes
    from odf.style import MasterPage, PageLayout

    doc = OpenDocumentPresentation()
    layout = PageLayout(name="Layout")
    doc.automaticstyles.addElement(layout)
    master = MasterPage(name="Default", pagelayoutname=layout)
    doc.masterstyles.addElement(master)
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    doc.automaticstyles.addElement(bold)
    for title, parts in slides:
        page = Page(masterpagename=master)
        for content in ([(title, False)], parts):
            frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
            box = TextBox()
            p = P()
            for text, is_bold in content:
                p.addElement(Span(stylename=bold, text=text)) if is_bold else p.addText(text)
            box.addElement(p)
            frame.addElement(box)
            page.addElement(frame)
        notes = Notes()
        frame = Frame(width="20cm", height="3cm", x="1cm", y="1cm")
        box = TextBox()
        box.addElement(P(text=f"Notes: {title}"))
        frame.addElement(box)
        notes.addElement(frame)
        page.addElement(notes)
        doc.presentation.addElement(page)
    out = io.BytesIO()
    doc.write(out)
    return out.getvalue()


def read_odp(data: bytes) -> list[str]:
    """Every paragraph's text in content.xml, in order."""
    return read_odt(data, headings=False)


def make_epub(title: str, chapters: list[tuple[str, str]]) -> bytes:
    """An EPUB 3 book written by ebooklib: chapters of (title, XHTML body), a navigation document
    and an NCX table of contents."""
    import tempfile

    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title(title)
    book.set_language("en")
    items = []
    for i, (name, body) in enumerate(chapters):
        c = epub.EpubHtml(title=name, file_name=f"chap{i}.xhtml", lang="en")
        c.content = f"<html><head><title>{name}</title></head><body>{body}</body></html>"
        book.add_item(c)
        items.append(c)
    book.toc = items
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "book.epub"
        epub.write_epub(str(path), book)
        written = zipfile.ZipFile(path)
    # the same bytes every time (the seeded damage tests need them): fixed dates
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in written.infolist():
            body = written.read(info)
            if info.filename.endswith(".opf"):
                body = re.sub(rb'(<meta property="dcterms:modified">)[^<]*', rb"\g<1>2026-01-01T00:00:00Z", body)
            fixed = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            fixed.compress_type = info.compress_type
            z.writestr(fixed, body)
    return out.getvalue()


def read_epub(data: bytes) -> dict[str, str]:
    """Each XHTML or NCX member's text, as ebooklib reads the book."""
    import tempfile

    from ebooklib import epub

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "book.epub"
        path.write_bytes(data)
        book = epub.read_epub(str(path))
        return {item.file_name: item.get_content().decode() for item in book.get_items() if item.file_name.endswith((".xhtml", ".ncx"))}


# a translator that knows these texts (and upper-cases the rest): the inline-formatting tests
FRENCH = {
    "The red car is fast.": "La voiture rouge est rapide.",
    "red": "rouge",
    "Red cars are fast.": "Les voitures rouges sont rapides.",
    "Red": "Rouge",
    "Visit our website for more information.": "Visitez notre site web pour plus d'informations.",
    "our website": "notre site Web",
    "Click Save to keep your changes.": "Cliquez sur Enregistrer pour conserver vos modifications.",
    "Save": "Enregistrer",
    "She has a big red car.": "Elle a une grosse voiture rouge.",
    "big": "gros",
    "I have a red car": "J'ai une voiture rouge",
    "Run X as root.": "Exécutez X en tant que root.",
}


def to_french(texts: list[str]) -> list[str]:
    return [FRENCH.get(t, t.upper()) for t in texts]
