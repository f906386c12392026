"""Inline formatting laid back on a paragraph's translation (``documents.inline``), and the formats
that use it: the words of a bold run, a link or an italic span end up on the words that translate
them, wherever the translation puts them."""

from __future__ import annotations

import io
import zipfile

import pytest
from bs4 import BeautifulSoup

from rendition.model import documents
from rendition.model.documents import Limits
from rendition.model.documents.inline import Insert, Paragraph, closest_words, find_words
from tests.model.documents.helpers import make_docx, make_odt, make_pptx, read_docx, read_pptx, to_french

B, PLAIN = ("b",), ()

translate = to_french


def test_words_are_found_whole_and_in_order():
    assert find_words("La voiture rouge est rapide.", "Rouge") == (11, 16)
    assert find_words("Les voitures rouges", "rouge") is None  # not inside a word
    assert find_words("rouge et rouge", "rouge", start=1) == (9, 14)
    assert find_words("Cliquez sur « Enregistrer ».", "« Enregistrer. »") == (14, 25)  # outer punctuation aside
    assert find_words("anything", " .. ") is None
    t = "Les voitures rouges sont rapides."
    assert t[slice(*closest_words(t, "rouge"))] == "rouges"  # ratio 10/11
    assert t[slice(*closest_words(t, "les voiture"))] == "Les voitures"
    assert closest_words(t, "bleu") is None


def test_a_region_takes_the_words_that_translate_it_and_the_rest_goes_around_it():
    p = Paragraph(("The ", "red", " car is fast."), (PLAIN, B, PLAIN))
    assert p.text == "The red car is fast." and p.regions == [(1, 2)] and p.region_texts == ["red"]
    assert p.arrange("La voiture rouge est rapide.", ["rouge"]).texts == ["La voiture ", "rouge", " est rapide."]
    # a region at the start of the source, but not of the translation: base text is inserted before it
    p = Paragraph(("Red", " cars are fast."), (B, PLAIN))
    got = p.arrange("Les voitures rouges sont rapides.", ["Rouge"])
    assert got.texts == ["rouges", " sont rapides."] and got.inserts == [Insert(0, True, "Les voitures ")]
    # and at its end
    p = Paragraph(("I have a ", "red car"), (PLAIN, B))
    got = p.arrange("J'ai une voiture rouge", ["voiture rouge"])
    assert got.texts == ["J'ai une ", "voiture rouge"] and got.inserts == []


def test_a_region_keeps_its_own_punctuation_where_the_translation_has_it():
    p = Paragraph(("Files end in ", ".rs", "; see ", "Warning:", " below."), (PLAIN, ("em",), PLAIN, B, PLAIN))
    got = p.arrange("Les fichiers se terminent par .rs ; voir Attention : ci-dessous.", [".rs", "Attention :"])
    assert got.texts == ["Les fichiers se terminent par ", ".rs", " ; voir ", "Attention :", " ci-dessous."]
    # and without it, where the translation puts the punctuation apart
    got = p.arrange("Les fichiers se terminent par rs ; voir Attention ci-dessous.", [".rs", "Attention :"])
    assert got.texts == ["Les fichiers se terminent par ", "rs", " ; voir ", "Attention", " ci-dessous."]


def test_outer_white_space_two_regions_and_nested_styles():
    p = Paragraph(("\n  The ", "red", " ", "big", " car\n"), (PLAIN, B, PLAIN, ("i",), PLAIN))
    assert p.regions == [(1, 2), (3, 4)] and p.text == "The red big car"
    got = p.arrange("LA ROUGE GROSSE VOITURE", ["ROUGE", "GROSSE"])
    assert got.texts == ["\n  LA ", "ROUGE", " ", "GROSSE", " VOITURE\n"]
    # formatted runs side by side are one region, its translation cut over them by length
    p = Paragraph(("A ", "red", "big", " car"), (PLAIN, B, ("i",), PLAIN))
    assert p.regions == [(1, 3)] and p.region_texts == ["redbig"]
    assert p.arrange("UNE ROUGEGROS VOITURE", ["ROUGEGROS"]).texts == ["UNE ", "ROUGEGROS", "", " VOITURE"]
    # a bold phrase with an italic word inside it is one region, its text cut by length
    p = Paragraph(("See ", "the ", "big", " car", " now"), (PLAIN, B, ("b", "i"), B, PLAIN))
    assert p.base == PLAIN and p.regions == [(1, 4)]
    got = p.arrange("VOIS LA GROSSE VOITURE MAINTENANT", ["LA GROSSE VOITURE"]).texts
    assert got[0] == "VOIS " and "".join(got[1:4]) == "LA GROSSE VOITURE" and got[4] == " MAINTENANT"


def test_regions_not_found_share_the_text_around_them_by_length():
    p = Paragraph(("Click ", "Save", " to keep ", "all", " changes."), (PLAIN, B, PLAIN, ("i",), PLAIN))
    t = "Cliquez sur Enregistrer pour conserver toutes les modifications."
    assert p.arrange(t, ["Enregistrer", "tout"]).texts == [
        "Cliquez sur ",
        "Enregistrer",
        " pour conserver ",
        "toutes",
        " les modifications.",
    ]
    got = p.arrange(t, ["Enregistrer", "chaque"])  # "chaque" is not there: its slot takes a share by length
    assert got.texts[:2] == ["Cliquez sur ", "Enregistrer"] and "".join(got.texts) == t
    assert not got.texts[3].endswith(" ")  # a cut's space goes after the markup, not inside it
    # none found (or not translated): the translation is spread over the slots by their lengths
    assert p.arrange(t, [None, "xyz"]).texts == p.spread(t)
    assert "".join(p.spread(t)) == t


def test_the_base_is_the_style_around_the_formatted_words_or_of_most_characters():
    p = Paragraph(("Open ", "the file", "."), (PLAIN, B, PLAIN))
    assert p.base == PLAIN and p.region_texts == ["the file"]  # (fewer characters, but on both ends)
    # of styles that are not within one another (a .docx run's properties), that of most characters
    p = Paragraph(("Two ", "runs here"), ("plain", "italic"))
    assert p.base == "italic" and p.region_texts == ["Two"]
    # else the level all the others are within: three links a paragraph of commas joins
    p = Paragraph(("long link text", ", ", "b", ", ", "c"), (("a", "x"), PLAIN, ("a", "y"), PLAIN, ("a", "z")))
    assert p.base == PLAIN and p.region_texts == ["long link text", "b", "c"]
    assert Paragraph(("all bold",), (B,)).regions == []


def roundtrip(data: bytes, name: str) -> bytes:
    doc = documents.open_document(data, name, Limits())
    return doc.render(documents.translate_segments(doc.segments, translate))


def test_docx_and_pptx_runs_land_on_their_words_and_a_run_is_added_where_needed():
    data = make_docx(
        [[("The ", False), ("red", True), (" car is fast.", False)], [("Red", True), (" cars are fast.", False)]]
    )
    assert read_docx(roundtrip(data, "a.docx")) == [
        [("La voiture ", False), ("rouge", True), (" est rapide.", False)],
        [("Les voitures ", False), ("rouges", True), (" sont rapides.", False)],  # a run added, as the others
    ]
    data = make_pptx("Title", [[("Red", True), (" cars are fast.", False)]])
    assert read_pptx(roundtrip(data, "a.pptx"))[1] == [
        ("Les voitures ", False),
        ("rouges", True),
        (" sont rapides.", False),
    ]


def test_odt_spans_land_on_their_words():
    out = roundtrip(make_odt("Heading", [("Red", True), (" cars are fast.", False)]), "a.odt")
    content = zipfile.ZipFile(io.BytesIO(out)).read("content.xml").decode()
    assert '<text:p>Les voitures <text:span text:style-name="Bold">rouges</text:span> sont rapides.</text:p>' in content


@pytest.mark.parametrize(
    "page, expected",
    [
        ("<p>The <b>red</b> car is fast.</p>", "<p>La voiture <b>rouge</b> est rapide.</p>"),
        ("<p><b>Red</b> cars are fast.</p>", "<p>Les voitures <b>rouges</b> sont rapides.</p>"),
        (
            '<li>Visit <a href="/x">our website</a> for more information.</li>',
            '<li>Visitez <a href="/x">notre site web</a> pour plus d\'informations.</li>',
        ),
        # the base text inside a span of its own: inserted within it, beside the bold
        (
            '<p><span class="s"><b>Red</b> cars are fast.</span></p>',
            '<p><span class="s">Les voitures <b>rouges</b> sont rapides.</span></p>',
        ),
        # blocks, line breaks and code end a paragraph; their white space stays
        (
            "<div>\n<p>Click <b>Save</b> to keep your changes.</p>\n<p>one<br>two <code>x = 1</code> three</p>\n</div>",
            "<div>\n<p>Cliquez sur <b>Enregistrer</b> pour conserver vos modifications.</p>\n<p>ONE<br/>TWO <code>x = 1</code> THREE</p>\n</div>",
        ),
    ],
)
def test_html_paragraphs_keep_inline_markup_on_its_words(page, expected):
    assert roundtrip(page.encode(), "a.html").decode() == expected


def test_html_paragraph_segments():
    doc = documents.open_document(
        b"<h1>Title</h1><p>She has a <i>big</i> red car.<br>Next line</p><pre>kept</pre>", "a.html", Limits()
    )
    assert doc.segments == ["Title", "She has a big red car.", "Next line", "big"]
    assert (
        doc.render(translate(doc.segments)).decode()
        == "<h1>TITLE</h1><p>Elle a une <i>grosse</i> voiture rouge.<br/>NEXT LINE</p><pre>kept</pre>"
    )


def test_a_fixed_slot_travels_as_a_placeholder_and_keeps_its_place():
    p = Paragraph(("Run ", "make {0}", " as ", "root", "."), (PLAIN, ("code",), PLAIN, B, PLAIN), frozenset({1}))
    assert p.tokens == {1: "{1}"}  # ("{0}" is in the text already)
    assert p.text == "Run {1} as root." and p.region_texts == ["root"]
    got = p.arrange("Exécuter {1} en tant que root.", ["root"])
    assert got.texts == ["Exécuter ", "make {0}", " en tant que ", "root", "."] and got.inserts == []
    # the fixed slot's text never changes, and its placeholder never shows
    assert got.texts[1] == "make {0}" and all("{1}" not in x for x in got.texts)
    # its placeholder lost or repeated: it stays where it was, the translation spread around it
    for t in ("Exécuter en tant que root.", "Exécuter {1} {1} en tant que root."):
        got = p.arrange(t, ["root"])
        assert got.texts[1] == "make {0}" and all("{1}" not in x for x in got.texts), got


def test_html_inline_code_keys_and_variables_keep_their_place():
    page = "<p>Press <kbd>Ctrl</kbd>+<kbd>S</kbd> to save.</p><p><code>make</code> builds <b>it</b>.</p><pre>keep</pre>"
    doc = documents.open_document(page.encode(), "a.html", Limits())
    assert doc.segments == ["Press {0} to save.", "{0} builds it.", "it"]  # (Ctrl+S: one placeholder)
    french = {"Press X to save.": "Pour enregistrer, appuyez sur X.", "X builds it.": "X le construit.", "it": "le"}
    out = doc.render(documents.translate_segments(doc.segments, lambda ts: [french[t] for t in ts])).decode()
    assert out == (
        "<p>Pour enregistrer, appuyez sur <kbd>Ctrl</kbd>+<kbd>S</kbd>.</p>"
        "<p><code>make</code> <b>le</b> construit.</p><pre>keep</pre>"
    )
    # the bold word before the code in the translation, after it in the source: the words are
    # right and the code is in its place, the bold is not kept (the source's order is)
    french["X builds it."] = "On le construit avec X."
    doc = documents.open_document(page.encode(), "a.html", Limits())
    out = doc.render(documents.translate_segments(doc.segments, lambda ts: [french[t] for t in ts])).decode()
    assert BeautifulSoup(out, "html.parser").find_all("p")[1].get_text() == "On le construit avec make."
    assert "<code>make</code>." in out


def test_a_docx_hyperlink_is_a_region_and_stays_a_link():
    import copy

    import docx
    from lxml import etree

    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    d = docx.Document()
    p = d.add_paragraph()
    p.add_run("Visit ")
    link = etree.SubElement(p._p, f"{{{w}}}hyperlink")
    link.set(f"{{{rel}}}id", d.part.relate_to("https://example.org/", f"{rel}/hyperlink", is_external=True))
    etree.SubElement(etree.SubElement(link, f"{{{w}}}r"), f"{{{w}}}t").text = "our website"
    p._p.append(copy.deepcopy(p.runs[0]._r))
    p._p[-1][-1].text = " for more information."
    data = io.BytesIO()
    d.save(data)
    doc = documents.open_document(data.getvalue(), "a.docx", Limits())
    assert doc.segments == ["Visit our website for more information.", "our website"]
    french = {
        "Visit X for more information.": "Pour plus d'informations, visitez X.",
        "Visit our website for more information.": "Pour plus d'informations, visitez notre site web.",
        "our website": "notre site web",
    }
    out = doc.render(documents.translate_segments(doc.segments, lambda ts: [french[t] for t in ts]))
    body = etree.fromstring(zipfile.ZipFile(io.BytesIO(out)).read("word/document.xml")).find(f"{{{w}}}body/{{{w}}}p")
    pieces = [("link" if el.tag == f"{{{w}}}hyperlink" else "run", "".join(el.itertext())) for el in body]
    assert pieces == [("run", "Pour plus d'informations, visitez "), ("link", "notre site web"), ("run", ".")]


def test_odp_slides_notes_and_spans():
    from tests.model.documents.helpers import make_odp, read_odp

    data = make_odp([("A title", [("The ", False), ("red", True), (" car is fast.", False)])])
    doc = documents.open_document(data, "deck.odp", Limits())
    assert doc.segments == ["A title", "The red car is fast.", "Notes: A title", "red"]
    out = roundtrip(data, "deck.odp")
    assert read_odp(out) == ["A TITLE", "La voiture rouge est rapide.", "NOTES: A TITLE"]
    content = zipfile.ZipFile(io.BytesIO(out)).read("content.xml").decode()
    assert 'La voiture <text:span text:style-name="Bold">rouge</text:span> est rapide.' in content
    with pytest.raises(documents.InvalidDocument, match="not an .odp presentation"):
        documents.open_document(make_odt("Heading", [("Text", False)]), "deck.odp", Limits())


def test_epub_chapters_navigation_and_table_of_contents():
    from tests.model.documents.helpers import make_epub, read_epub

    data = make_epub(
        "A book",
        [("Chapter one", "<h1>Chapter one</h1><p>The <b>red</b> car is fast.</p><p>Run <code>make</code> now.</p>")],
    )
    doc = documents.open_document(data, "book.epub", Limits())
    assert set(doc.segments) == {"Chapter one", "The red car is fast.", "Run {0} now.", "red", "A book"}
    out = roundtrip(data, "book.epub")
    got = read_epub(out)  # (ebooklib reads the translated book)
    chapter = got["chap0.xhtml"]
    assert "<p>La voiture <b>rouge</b> est rapide.</p>" in chapter and "<p>RUN <code>make</code> NOW.</p>" in chapter
    assert (
        "<h1>CHAPTER ONE</h1>" in chapter
        and "<text>CHAPTER ONE</text>" in got["toc.ncx"]
        and "<text>A BOOK</text>" in got["toc.ncx"]
    )
    a, b = zipfile.ZipFile(io.BytesIO(data)), zipfile.ZipFile(io.BytesIO(out))
    assert b.namelist()[0] == "mimetype" and b.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
    assert {n for n in a.namelist() if a.read(n) != b.read(n)} == {"EPUB/chap0.xhtml", "EPUB/nav.xhtml", "EPUB/toc.ncx"}


def test_epub_refuses_entity_declarations_and_what_is_not_a_book():
    from tests.model.documents.helpers import make_epub, replace_member

    data = make_epub("A book", [("One", "<p>Text.</p>")])
    lol = b'<?xml version="1.0"?><!DOCTYPE html [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><html><body><p>&b;</p></body></html>'
    with pytest.raises(documents.InvalidDocument, match="forbidden XML construct"):
        documents.open_document(replace_member(data, "EPUB/chap0.xhtml", lol), "book.epub", Limits())
    with pytest.raises(documents.InvalidDocument, match="malformed XML"):
        documents.open_document(
            replace_member(data, "EPUB/chap0.xhtml", b"<html><body><p>a&nbsp;b</p></body></html>"),
            "book.epub",
            Limits(),
        )
    with pytest.raises(documents.InvalidDocument, match="not an EPUB book"):
        documents.open_document(make_docx([[("Hello", False)]]), "book.epub", Limits())
    # a DOCTYPE without declarations (EPUB 2's XHTML 1.1 one) is read
    xhtml11 = b'<?xml version="1.0"?><!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd"><html xmlns="http://www.w3.org/1999/xhtml"><body><p>Text.</p></body></html>'
    assert (
        "Text."
        in documents.open_document(replace_member(data, "EPUB/chap0.xhtml", xhtml11), "book.epub", Limits()).segments
    )


def test_a_paragraph_with_more_code_than_stand_ins_is_translated_all_the_same():
    """Eight pieces of inline code in two sentences (the stand-ins are five): HTML and Markdown
    paragraphs still go to the translator, the text pipeline protecting them sentence by sentence;
    a catalog's entry (``placeholders_whole``), or a sentence of its own with more than five, is
    left as it was (bare placeholders would be garbled, and the words around them)."""
    sentence = " or ".join("<code>c%d</code>" for _ in range(4))
    page = f"<p>Use {sentence % (0, 1, 2, 3)}. Then use {sentence % (4, 5, 6, 7)}.</p>"
    doc = documents.open_document(page.encode(), "a.html", Limits())
    assert (
        doc.segments == ["Use {0} or {1} or {2} or {3}. Then use {4} or {5} or {6} or {7}."]
        and not doc.placeholders_whole
    )
    assert documents.translate_segments(doc.segments, to_french, whole=True) == [None]
    out = doc.render(documents.translate_segments(doc.segments, to_french, doc.placeholders_whole)).decode()
    assert out == page.replace("Use", "USE").replace(" or ", " OR ").replace("Then use", "THEN USE")
    one = documents.open_document(
        ("<p>Use " + " or ".join(f"<code>c{i}</code>" for i in range(7)) + ".</p>").encode(), "a.html", Limits()
    )
    assert documents.translate_segments(one.segments, to_french, False) == [None]
    # code parted by punctuation only is one placeholder: a list of seven options is one
    listed = documents.open_document(
        ("<p>" + ", ".join(f"<code>c{i}</code>" for i in range(7)) + " are names.</p>").encode(), "a.html", Limits()
    )
    assert listed.segments == ["{0} are names."]
    assert documents.open_document(b'msgid "a"\nmsgstr ""\n', "a.po", Limits()).placeholders_whole
