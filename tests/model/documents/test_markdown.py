"""Markdown files (``documents.markdown``): what is prose is translated, with its inline markup on
the words that translate it; what is not (code, HTML blocks, front matter, references, table
delimiters) comes back as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from rendition.model import documents
from rendition.model.documents import Limits
from rendition.model.documents.markdown import inline_pieces
from tests.model.documents.helpers import to_french

translate = to_french


def roundtrip(text: str, translator=translate) -> str:
    doc = documents.open_document(text.encode(), "README.md", Limits())
    return doc.render(documents.translate_segments(doc.segments, translator)).decode()


@pytest.mark.parametrize(
    "source, pieces",
    [
        (
            "The **red** car",
            [
                ("text", "The ", ()),
                ("markup", "**", ()),
                ("text", "red", ("**",)),
                ("markup", "**", ()),
                ("text", " car", ()),
            ],
        ),
        ("Run `a * b` now", [("text", "Run ", ()), ("fixed", "`a * b`", ()), ("text", " now", ())]),
        (
            "see [the *guide*](https://x.org/a_(b)) here",
            [
                ("text", "see ", ()),
                ("markup", "[", ()),
                ("text", "the ", ("link", "](https://x.org/a_(b))")),
                ("markup", "*", ()),
                ("text", "guide", ("link", "](https://x.org/a_(b))", "*")),
                ("markup", "*", ()),
                ("markup", "](https://x.org/a_(b))", ()),
                ("text", " here", ()),
            ],
        ),
        # no emphasis: spaces around a star, an underscore inside a word, a delimiter never closed
        ("5 * 3 and snake_case and *open", [("text", "5 * 3 and snake_case and *open", ())]),
        (
            "a \\* b ![logo](x.png) <https://x.org> <br/>",
            [
                ("text", "a ", ()),
                ("fixed", "\\*", ()),
                ("text", " b ", ()),
                ("fixed", "![logo](x.png)", ()),
                ("text", " ", ()),
                ("fixed", "<https://x.org>", ()),
                ("text", " ", ()),
                ("fixed", "<br/>", ()),
            ],
        ),
        (
            "[not a link] and [ref][r]",
            [
                ("text", "[not a link] and ", ()),
                ("markup", "[", ()),
                ("text", "ref", ("link", "][r]")),
                ("markup", "][r]", ()),
            ],
        ),
    ],
)
def test_inline_pieces(source, pieces):
    got = inline_pieces(source)
    assert [(p.kind, p.text, p.style) for p in got] == pieces
    assert "".join(p.text for p in got) == source


def test_inline_markup_lands_on_its_words():
    assert roundtrip("The **red** car is fast.\n") == "La voiture **rouge** est rapide.\n"
    assert roundtrip("__Red__ cars are fast.\n") == "Les voitures __rouges__ sont rapides.\n"
    assert roundtrip('Visit [our website](https://example.org/ "Home") for more information.\n') == (
        'Visitez [notre site web](https://example.org/ "Home") pour plus d\'informations.\n'
    )
    assert roundtrip("Run `make install` as root.\n") == "Exécutez `make install` en tant que root.\n"


def test_blocks_kept_and_translated():
    source = (
        "---\ntitle: A page\n---\n\n"
        "# Getting *started* #\n\n"
        "Intro text.\n\n"
        "- one item\n- [ ] a task\n  that goes on\n3. third\n\n"
        "> quoted text\n> more of it\n\n"
        "| Name | What |\n|:-----|-----:|\n| `x` | a thing |\n| b \\| c | other |\n\n"
        "```sh\necho hello\n```\n\n"
        "    indented code\n\n"
        "[ref]: https://example.org\n\n"
        "Title\n=====\n\n"
        '<div align="center">\n  <img src="logo.png">\n</div>\n\n'
        "***\n"
        "hard break  \nnext line\n"
    )
    assert roundtrip(source) == (
        "---\ntitle: A page\n---\n\n"
        "# GETTING *STARTED* #\n\n"
        "INTRO TEXT.\n\n"
        "- ONE ITEM\n- [ ] A TASK THAT GOES ON\n3. THIRD\n\n"
        "> QUOTED TEXT MORE OF IT\n\n"
        "| NAME | WHAT |\n|:-----|-----:|\n| `x` | A THING |\n| B \\| C | OTHER |\n\n"
        "```sh\necho hello\n```\n\n"
        "    indented code\n\n"
        "[ref]: https://example.org\n\n"
        "TITLE\n=====\n\n"
        '<div align="center">\n  <img src="logo.png">\n</div>\n\n'
        "***\n"
        "HARD BREAK  \nNEXT LINE\n"
    )


def test_a_wrapped_paragraph_is_wrapped_again_and_crlf_kept():
    source = (
        "This paragraph was wrapped at a width of about sixty characters\r\n"
        "by an editor, and every line but the last is about that long\r\n"
        "too.\r\n"
    )
    out = roundtrip(source)
    lines = out.split("\r\n")
    assert out.endswith("\r\n") and len(lines) == 4 and lines[-1] == ""
    assert " ".join(lines).split() == source.upper().split() and max(len(x) for x in lines) <= 64
    # a wrapped line that would start a block (a list, a heading) stays on the line before
    source = "Some words here that make a line long enough to be a wrapped one, ok\nand then more words so the rest.\n"
    assert (
        roundtrip(source, lambda ts: ["a" * 67 + " - b" for t in ts]) == "a" * 67 + " - b\n"
    )  # (68 wide: "- b" would be a list)


def test_the_limits_count_paragraphs_and_markdown_is_a_served_format():
    page = "".join(f"Paragraph **{i}** of ten.\n\n" for i in range(10))
    assert len(documents.open_document(page.encode(), "a.md", Limits(max_segments=10)).segments) == 20
    assert documents.media_type("README.md") == documents.media_type("notes.markdown") == "text/markdown; charset=utf-8"


REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("path", ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))])
def test_real_files_come_back_word_for_word_when_nothing_changes(path):
    """This repository's own Markdown (tables, code, links side by side, bold phrases at both ends
    of a paragraph), translated by the identity: every word and every piece of markup in its place
    (only where a paragraph's lines were joined may the white space differ)."""
    text = (REPO / path).read_text()
    doc = documents.open_document(text.encode(), path, Limits(max_segments=1 << 30, max_chars=1 << 40))
    assert len(doc.segments) > 10
    assert doc.render(documents.translate_segments(doc.segments, list)).decode().split() == text.split()


def test_an_html_block_with_text_is_translated_as_html():
    source = 'Intro.\n\n<p align="center">\n<b>Red</b> cars are fast.\n</p>\n\n<div align="center">\n  <img src="logo.png">\n</div>\n'
    assert roundtrip(source) == (
        'INTRO.\n\n<p align="center">\nLes voitures <b>rouges</b> sont rapides.\n</p>\n\n<div align="center">\n  <img src="logo.png">\n</div>\n'
    )
