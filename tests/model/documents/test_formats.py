"""The document formats on real files (written by python-docx, python-pptx, odfpy, polib, srt and a
real Debian catalog), translated by an upper-casing function: what is checked here is the format
handling (what is extracted, what comes back where, what is kept), not the translator (the
service and CLI tests translate with the shipped model)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import polib
import pytest
import srt

from rendition.model import documents
from rendition.model.documents import DocumentTooLarge, InvalidDocument, Limits, UnsupportedFormat
from rendition.model.documents.base import spread
from rendition.model.text.placeholders import FILLERS, NUMBERS, placeholders, protect, restore
from tests.model.documents.helpers import (
    BILLION_LAUGHS,
    lying_zip,
    make_docx,
    make_epub,
    make_odp,
    make_odt,
    make_pptx,
    msgfmt_check,
    read_docx,
    read_odt,
    read_pptx,
    replace_member,
    zip_bomb,
)

DATA = Path(__file__).parent / "data"
REAL_PO = DATA / "pg_test_timing-15.fr.po"


def upper(texts: list[str]) -> list[str]:
    return [t.upper() for t in texts]


def roundtrip(data: bytes, name: str, translate=upper, **kw) -> bytes:
    doc = documents.open_document(data, name, Limits(), **kw)
    return doc.render(documents.translate_segments(doc.segments, translate))


# -- placeholders ---------------------------------------------------------------------------------


def test_stand_ins_are_those_of_the_training_corpus():
    from rendition.model.training.corpus import clean

    assert clean.FILLERS is FILLERS and clean.NUMBERS is NUMBERS  # one alphabet


@pytest.mark.parametrize(
    "text, sent",
    [
        ("Delete %s?", "Delete X?"),
        ("%d files in %s", "3 files in X"),
        ("Hello {name}, you have {0} new %(kind)s", "Hello X, you have Y new Z"),
        ("Press <b>Enter</b> now", "Press X Enter Y now"),
        ("100%% of %s", "100 X of Y"),
        ("X marks %s", "X marks Y"),  # X is taken by the text: the next stand-in
    ],
)
def test_protect_uses_the_stand_ins(text, sent):
    p = protect(text)
    assert p is not None and p.text == sent
    assert restore(p, sent) == text


def test_restore_refuses_a_lost_repeated_or_reordered_placeholder():
    p = protect("%s: invalid argument for option %s")
    assert restore(p, "X : argument invalide pour l'option Y") == "%s : argument invalide pour l'option %s"
    assert restore(p, "X : argument invalide") is None  # lost
    assert restore(p, "X : X et Y") is None  # repeated
    assert restore(p, "Y : argument invalide pour X") is None  # unnumbered printf swapped: the arguments would be
    named = protect("%(a)s and {b}")
    assert restore(named, "Y et X") == "{b} et %(a)s"  # named ones may move
    assert restore(protect("plain text"), "texte à 50 %") is None  # a new "%" could be a new conversion
    assert protect("%s %s %s %s %s %s") is None  # more than there are stand-ins


def test_spread_keeps_words_whole_and_joins_back():
    pieces = spread("BONJOUR LE MONDE ENTIER ET LE RESTE", [6, 11, 20])
    assert "".join(pieces) == "BONJOUR LE MONDE ENTIER ET LE RESTE"
    assert all(p == "" or p.endswith(" ") or p is pieces[-1] for p in pieces)
    assert spread("UN", [3, 0, 4]) == ["UN", "", ""]


# -- formats ----------------------------------------------------------------------------------------


def test_docx_runs_keep_their_formatting():
    data = make_docx(
        [[("Hello ", False), ("bold world", True), (" and the rest.", False)], [("One run with {0}.", False)]],
        header="Header text",
    )
    doc = documents.open_document(data, "a.docx", Limits())
    # the paragraphs, then the words formatted apart (found in their paragraph's translation)
    assert doc.segments == ["Hello bold world and the rest.", "One run with {0}.", "Header text", "bold world"]
    out = roundtrip(data, "a.docx")
    paragraphs = read_docx(out)
    assert paragraphs[0] == [("HELLO ", False), ("BOLD WORLD", True), (" AND THE REST.", False)]
    assert paragraphs[1] == [("ONE RUN WITH {0}.", False)]
    import docx

    assert docx.Document(io.BytesIO(out)).sections[0].header.paragraphs[0].text == "HEADER TEXT"
    # everything but the translated parts is byte for byte the same
    a, b = zipfile.ZipFile(io.BytesIO(data)), zipfile.ZipFile(io.BytesIO(out))
    assert a.namelist() == b.namelist()
    changed = {n for n in a.namelist() if a.read(n) != b.read(n)}
    assert changed == {"word/document.xml", "word/header1.xml"} or changed <= {"word/document.xml"} | {
        n for n in a.namelist() if n.startswith("word/header")
    }


def test_pptx_slides_and_runs():
    data = make_pptx("Slide title", [[("First bullet", False)], [("Two ", False), ("runs here", True)]])
    doc = documents.open_document(data, "a.pptx", Limits())
    # not the layouts' prompts; "Two" is formatted apart from most of its paragraph
    assert doc.segments == ["Slide title", "First bullet", "Two runs here", "Two"]
    assert read_pptx(roundtrip(data, "a.pptx")) == [
        [("SLIDE TITLE", None)],
        [("FIRST BULLET", False)],
        [("TWO", False), (" RUNS HERE", True)],
    ]


def test_odt_spans_and_headings():
    data = make_odt("A heading", [("Plain start ", False), ("bold part", True), (" end.", False)])
    doc = documents.open_document(data, "a.odt", Limits())
    assert sorted(doc.segments) == ["A heading", "Plain start bold part end.", "bold part"]
    out = roundtrip(data, "a.odt")
    assert read_odt(out) == ["A HEADING", "PLAIN START BOLD PART END."]
    z = zipfile.ZipFile(io.BytesIO(out))
    assert z.namelist()[0] == "mimetype" and z.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
    # the bold span holds the translation of its words
    assert b'text:style-name="Bold">BOLD PART</text:span> END.</text:p>' in z.read("content.xml")


def test_html_visible_text_not_scripts_or_markup():
    page = (
        b"<!DOCTYPE html><html><head><title>Title</title><style>p { color: red }</style>"
        b"<script>var a = 'do not';</script></head><body><p class=\"x\">Hello <b>world</b>!</p>"
        b"<!-- a comment --></body></html>"
    )
    out = roundtrip(page, "page.html").decode()
    assert out == (
        "<!DOCTYPE html>\n<html><head><title>TITLE</title><style>p { color: red }</style>"
        "<script>var a = 'do not';</script></head><body><p class=\"x\">HELLO <b>WORLD</b>!</p>"
        "<!-- a comment --></body></html>"
    )


@pytest.mark.parametrize(
    "lines, wrapped",
    [
        (["Roses are red,", "Violets are blue,", "Sugar is sweet,", "And so are you."], False),  # verse: short lines
        (["Pierre Martin", "12 rue de la Gare", "75010 Paris"], False),  # an address
        (["The meeting has been moved to Thursday.", "Please bring the report with you to the meeting."], False),  # 'Please' fitted
        (["Please read the whole of this message before you reply to it,", "since the details matter."], True),
    ],
)
def test_txt_a_paragraph_is_rewrapped_only_where_a_wrapper_broke_it(lines, wrapped):
    doc = documents.open_document("\n".join(lines).encode(), "a.txt", Limits())
    assert doc.segments == ([" ".join(lines)] if wrapped else lines)


def test_txt_paragraphs_lines_and_lists():
    text = (
        "Title\n\nThis is a long wrapped paragraph that goes on and on\nand continues on the next line.\n\n"
        "- item one\n- item two\n"
    )
    doc = documents.open_document(text.encode(), "a.txt", Limits())
    assert doc.segments == [
        "Title",
        "This is a long wrapped paragraph that goes on and on and continues on the next line.",
        "- item one",
        "- item two",
    ]
    assert roundtrip(text.encode(), "a.txt").decode() == text.upper()
    assert roundtrip(text.replace("\n", "\r\n").encode(), "a.txt").decode() == text.upper().replace("\n", "\r\n")


def test_srt_keeps_numbering_timing_and_line_count():
    subs = "1\n00:00:01,000 --> 00:00:02,500\nHello there,\nhow are you?\n\n7\n00:01:03,000 --> 00:01:04,000\nFine.\n\n"
    out = list(srt.parse(roundtrip(subs.encode(), "a.srt").decode()))
    src = list(srt.parse(subs))
    assert [(s.index, s.start, s.end) for s in out] == [(s.index, s.start, s.end) for s in src]
    assert [s.content for s in out] == ["HELLO THERE,\nHOW ARE YOU?", "FINE."]


def test_srt_extra_blank_lines_between_subtitles_are_no_text():
    subs = "1\n00:00:01,000 --> 00:00:02,000\nHello.\n\n\n\n2\n00:00:03,000 --> 00:00:04,000\nBye.\n\n\n"
    assert documents.open_document(subs.encode(), "a.srt", Limits()).segments == ["Hello.", "Bye."]


@pytest.mark.parametrize(
    "subs",
    [
        "1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n2\nno timing line\nGood night.\n\n3\n00:00:03,000 --> 00:00:04,000\nBye.\n",
        "1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\nA line after the last subtitle\n",
    ],
)
def test_srt_text_past_a_blank_line_without_its_timing_is_refused(subs):
    """The srt library reads such text into the subtitle before it (a player shows it nowhere): it
    would come back merged into that subtitle's lines."""
    with pytest.raises(InvalidDocument, match=r"subtitle 1 \(at 00:00:01,000\) has a blank line inside its text"):
        documents.open_document(subs.encode(), "a.srt", Limits())


# -- gettext ----------------------------------------------------------------------------------------


def cleared(path: Path, keep: int = 3) -> tuple[bytes, list[str]]:
    """The catalog with every translation but the first ``keep`` removed; the kept msgids."""
    po = polib.pofile(str(path))
    kept = []
    for e in po:
        if len(kept) < keep and (e.msgstr or any(e.msgstr_plural.values())):
            kept.append(e.msgid)
            continue
        e.msgstr = ""
        if e.msgid_plural:
            e.msgstr_plural = {0: "", 1: ""}
    return str(po).encode(), kept


def test_real_debian_catalog_round_trip(tmp_path):
    original = polib.pofile(str(REAL_PO))
    assert msgfmt_check(REAL_PO).returncode == 0
    data, kept = cleared(REAL_PO)
    out_path = tmp_path / "fr.po"
    out_path.write_bytes(roundtrip(data, "fr.po", target="fr"))
    check = msgfmt_check(out_path)
    assert check.returncode == 0, check.stderr
    po = polib.pofile(str(out_path))
    by_id = {e.msgid: e for e in original}
    for e in po:
        if not e.msgid:
            continue
        if e.msgid in kept:  # already translated: kept, not flagged
            assert e.msgstr == by_id[e.msgid].msgstr and "fuzzy" not in e.flags
            continue
        assert e.flags == [*by_id[e.msgid].flags, "fuzzy"]  # c-format kept, fuzzy for review
        if e.msgid_plural:
            assert e.msgstr_plural == {0: e.msgid.upper().replace("%U", "%u"), 1: e.msgid_plural.upper().replace("%U", "%u")}
        else:
            assert placeholders(e.msgstr) == placeholders(e.msgid)
    assert po.metadata == {**original.metadata, "Content-Type": "text/plain; charset=UTF-8"}


def test_po_accelerators_context_plurals_and_templates(tmp_path):
    pot = polib.POFile()
    pot.metadata = {
        "Project-Id-Version": "demo 1.0",
        "Content-Type": "text/plain; charset=CHARSET",
        "Content-Transfer-Encoding": "8bit",
        "Language": "",
        "Plural-Forms": "nplurals=INTEGER; plural=EXPRESSION;",
    }
    pot.append(polib.POEntry(msgid="_Open the file", msgctxt="menu"))
    pot.append(polib.POEntry(msgid="Save &As", msgctxt="menu"))
    pot.append(polib.POEntry(msgid="Tom & Jerry"))
    pot.append(polib.POEntry(msgid="snake_case names"))
    pot.append(polib.POEntry(msgid="%(count)d file", msgid_plural="%(count)d files", flags=["python-format"]))
    pot.append(polib.POEntry(msgid="Delete %s and %s?", flags=["c-format"]))
    pot.append(polib.POEntry(msgid="%s %s %s %s %s %s", flags=["c-format"]))  # too many to protect
    data = str(pot).encode()

    def swap(texts):  # a translation that reorders the two strings: must not be used
        return [t.upper().replace("X AND Y", "Y AND X") for t in texts]

    path = tmp_path / "fr.po"
    path.write_bytes(roundtrip(data, "demo.pot", translate=swap, target="fr"))
    check = msgfmt_check(path)
    assert check.returncode == 0, check.stderr
    po = polib.pofile(str(path))
    assert po.metadata["Plural-Forms"] == "nplurals=2; plural=(n > 1);" and po.metadata["Language"] == "fr"
    got = {(e.msgctxt, e.msgid): e for e in po}
    assert got[("menu", "_Open the file")].msgstr == "_OPEN THE FILE"
    assert got[("menu", "Save &As")].msgstr == "SAVE &AS"
    assert got[(None, "Tom & Jerry")].msgstr == "TOM & JERRY"
    assert got[(None, "snake_case names")].msgstr == "SNAKE_CASE NAMES"
    plural = got[(None, "%(count)d file")]
    assert plural.msgstr_plural == {0: "%(count)d FILE", 1: "%(count)d FILES"} and "fuzzy" in plural.flags
    for msgid in ("Delete %s and %s?", "%s %s %s %s %s %s"):  # left for a human, not fuzzy-translated
        assert got[(None, msgid)].msgstr == "" and "fuzzy" not in got[(None, msgid)].flags


def test_po_retranslate_and_an_upload_naming_a_file(tmp_path):
    data, _ = cleared(REAL_PO, keep=100)
    doc = documents.open_document(data, "fr.po", Limits(), target="fr")
    assert doc.segments == []
    doc = documents.open_document(data, "fr.po", Limits(), target="fr", retranslate=True)
    assert len(doc.segments) == 14
    secret = tmp_path / "secret.po"
    secret.write_text('msgid "a"\nmsgstr "b"\n')
    # polib takes a text naming an existing file for its path: the upload must be read as content
    with pytest.raises(InvalidDocument):
        documents.open_document(str(secret).encode(), "x.po", Limits())


# -- refused files ----------------------------------------------------------------------------------


def test_unknown_extension_lists_the_supported_ones():
    with pytest.raises(UnsupportedFormat, match=r"'\.exe'.*\.docx.*\.srt"):
        documents.open_document(b"MZ", "setup.exe", Limits())


@pytest.mark.parametrize("name", ["a.docx", "a.pptx", "a.odt"])
def test_not_a_zip(name):
    with pytest.raises(InvalidDocument, match="not a valid"):
        documents.open_document(b"Just some text, not a zip at all.", name, Limits())


def test_a_zip_of_the_wrong_kind():
    with pytest.raises(InvalidDocument, match="not a .docx document"):
        documents.open_document(make_pptx("t", []), "a.docx", Limits())
    with pytest.raises(InvalidDocument, match="not an .odt"):
        documents.open_document(make_docx([[("x", False)]]), "a.odt", Limits())


def test_zip_bomb_refused_from_its_headers():
    bomb = zip_bomb("word/document.xml", 200 << 20)
    assert len(bomb) < 1 << 20
    with pytest.raises(DocumentTooLarge, match=r"unpacks to 209,715,200 bytes; the limit is 50,000,000 bytes \(RENDITION_MAX_FILE_UNPACKED_BYTES\)"):
        documents.open_document(bomb, "a.docx", Limits())


def test_member_count_limit():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for i in range(30):
            z.writestr(f"m{i}", b"")
    with pytest.raises(DocumentTooLarge, match=r"30 zip members; the limit is 20 \(RENDITION_MAX_FILE_MEMBERS\)"):
        documents.open_document(out.getvalue(), "a.docx", Limits(max_members=20))


def test_a_zip_that_lies_about_its_sizes():
    bomb = lying_zip("word/document.xml", b"<a>" + b"x" * 1_000_000 + b"</a>", 10)
    with pytest.raises(InvalidDocument, match="damaged"):
        documents.open_document(bomb, "a.docx", Limits())


@pytest.mark.parametrize("name", ["a.docx", "b.epub"])
def test_a_zip_needing_a_version_python_cannot_read_is_refused(name):
    """A central directory entry asking for zip version 24.1 (a damaged byte): Python's zipfile
    refuses it with NotImplementedError when the archive is opened; that is a 400, not a 500."""
    data = bytearray(make_docx([[("Hello", False)]]) if name.endswith("docx") else make_epub("Book", [("One", "<p>x</p>")]))
    at = data.index(b"PK\x01\x02")
    data[at + 6 : at + 8] = (241).to_bytes(2, "little")  # "version needed to extract"
    with pytest.raises(InvalidDocument, match="not a zip archive"):
        documents.open_document(bytes(data), name, Limits())


def test_billion_laughs_in_a_docx():
    data = replace_member(make_docx([[("Hello", False)]]), "word/document.xml", BILLION_LAUGHS)
    with pytest.raises(InvalidDocument, match="forbidden XML construct"):
        documents.open_document(data, "a.docx", Limits())


@pytest.mark.parametrize(
    "data, name",
    [(b"\xff\xfe\x00b\x00a\x00d", "a.txt"), (b"msgid \"unterminated\nmsgstr", "a.po"), (b"not\nsubtitles\n", "a.srt")],
)
def test_malformed_text_formats(data, name):
    with pytest.raises(InvalidDocument):
        documents.open_document(data, name, Limits())


PO_HEAD = 'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


@pytest.mark.parametrize(
    "body, line, why",
    [
        ('msgid "x"\nmsgstr ""\n\nmsgid "no closing quote\n', 8, "a string without its closing quote"),
        ('msgid "no closing quote\nmsgstr ""\n', 5, "a string without its closing quote"),
        ('msgid "ends in an escaped quote\\"\nmsgstr ""\n', 5, "a string without its closing quote"),
        ('#~ msgid "obsolete, no closing quote\n#~ msgstr "x"\n', 5, "a string without its closing quote"),
        ('msgid "a"\nsome words\nmsgstr ""\n', 6, "neither a keyword"),
        ('msgid "a"\nmsgstr\n', 6, "neither a keyword"),
        ('msgid "a"\nmsgfoo ""\nmsgstr ""\n', 6, "neither a keyword"),
        ('msgid "a" b\nmsgstr ""\n', 5, "neither a keyword"),
    ],
)
def test_a_catalog_msgfmt_refuses_is_refused_with_its_line(body, line, why):
    """GNU msgfmt refuses each of these (checked by hand); polib reads the first four as if the quote
    were there, one character short, and would have them translated."""
    with pytest.raises(InvalidDocument, match=rf"not a valid gettext catalog: line {line}: {why}"):
        documents.open_document((PO_HEAD + body).encode(), "a.po", Limits(), target="fr")


@pytest.mark.parametrize(
    "body, texts",
    [
        ('msgctxt "menu"\nmsgid "File"\nmsgstr ""\n', ["File"]),
        ('msgid "one"\nmsgid_plural "many"\nmsgstr[0] ""\nmsgstr[1] ""\n', ["one", "many"]),
        ('msgid "tab\\there \\\\ \\"q\\""\nmsgstr ""\n', ['tab\there \\ "q"']),
        ('  msgid "indented"\r\n  msgstr ""\r\n', ["indented"]),
        ('msgid "a\u2028b"\nmsgstr ""\n', ["a\u2028b"]),
    ],
)
def test_the_syntax_msgfmt_accepts_is_read(body, texts):
    doc = documents.open_document((PO_HEAD + body).encode(), "a.po", Limits(), target="fr")
    assert doc.segments == texts


def test_segment_and_character_limits():
    text = "\n\n".join(f"Paragraph {i}." for i in range(50)).encode()
    with pytest.raises(DocumentTooLarge, match=r"50 texts to translate; the limit is 10 \(RENDITION_MAX_FILE_SEGMENTS\)"):
        documents.open_document(text, "a.txt", Limits(max_segments=10))
    with pytest.raises(DocumentTooLarge, match=r"the limit is 100 \(RENDITION_MAX_FILE_CHARS\)"):
        documents.open_document(text, "a.txt", Limits(max_chars=100))
    # the limits count the file's own texts, not the formatted words translated once more on their own
    page = "".join(f"<p>Paragraph <b>{i}</b> of ten.</p>" for i in range(10)).encode()
    assert len(documents.open_document(page, "a.html", Limits(max_segments=10, max_chars=200)).segments) == 20


@pytest.mark.parametrize("ext", sorted(set(documents.FORMATS) - {".htm", ".pot", ".markdown"}))
def test_damaged_files_are_refused_or_translated_never_crash(ext):
    """Seeded byte flips, cuts and insertions of a valid file: each either parses and renders or is a
    DocumentError (what the service answers 400/413), never another exception (a 500).  Among the
    cases: deflate streams zlib cannot inflate."""
    import random

    base = {
        ".docx": lambda: make_docx([[("Hello ", False), ("world", True)]]),
        ".pptx": lambda: make_pptx("Title", [[("Point", False)]]),
        ".odt": lambda: make_odt("Heading", [("Text", False)]),
        ".odp": lambda: make_odp([("Title", [("Text ", False), ("bold", True)])]),
        ".epub": lambda: make_epub("Book", [("One", "<p>Hello <b>there</b>.</p>")]),
        ".po": lambda: REAL_PO.read_bytes(),
        ".srt": lambda: b"1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n",
        ".html": lambda: b"<p>Hello <b>there</b></p>",
        ".txt": lambda: b"Hello there.\n",
        ".md": lambda: b"# Title\n\nHello **there**, run `make` and see [the guide](https://x.org/).\n\n- one\n- two\n",
    }[ext]()
    rng = random.Random(ext)
    for _ in range(200):
        b = bytearray(base)
        for _ in range(rng.randint(1, 20)):
            op = rng.random()
            if op < 0.5 and b:
                b[rng.randrange(len(b))] = rng.randrange(256)
            elif op < 0.8:
                b = b[: rng.randrange(len(b) + 1)]
            else:
                b[rng.randrange(len(b) + 1) : 0] = bytes(rng.randrange(256) for _ in range(5))
        try:
            doc = documents.open_document(bytes(b), "f" + ext, Limits(), target="fr")
            doc.render(documents.translate_segments(doc.segments, upper))
        except documents.DocumentError:
            pass
