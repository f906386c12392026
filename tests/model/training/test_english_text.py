"""General English text for the encoder's distillation corpus (model.training.english_text)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from model.training import english_text as et

FORTUNES = """Whenever you find yourself on the side of the majority, it is time to pause and reflect.
\t\t-- Mark Twain
%
Short one.
%
The best way to predict the future is to invent it. It really is the only reliable method.
%
"""

ROFF = r""".TH FOO 1
.SH NAME
foo \- frobnicate the bar
.SH DESCRIPTION
.B foo
reads the configuration file and writes a report to the standard output.
It uses \fBbold\fR and \fIitalic\fP words, and a \-\-long option.
.PP
.\" a comment that must not show up
Another paragraph starts here and it is long enough to keep.
"""


def test_split_and_keep() -> None:
    assert et.split_sentences("One two three. Four five six! Seven?") == ["One two three.", "Four five six!", "Seven?"]
    assert et.keep("This sentence has exactly six words.")
    assert not et.keep("Too short.")
    assert not et.keep("1234 5678 9012 3456 7890 1234 --- ///")  # mostly not letters
    assert not et.keep("Ceci est une phrase avec des accents é.")  # not ASCII


def test_fortunes_are_read_without_attributions(tmp_path: Path) -> None:
    d = tmp_path / "fortunes"
    d.mkdir()
    (d / "wisdom").write_text(FORTUNES)
    (d / "wisdom.dat").write_bytes(b"\x00\x01")  # strfile index: skipped
    texts = list(et.fortune_texts([d]))
    assert texts[0] == "Whenever you find yourself on the side of the majority, it is time to pause and reflect."
    assert len(texts) == 3 and not any("Twain" in t for t in texts)


def test_roff_to_text_strips_requests_escapes_and_comments() -> None:
    text = et.roff_to_text(ROFF)
    assert "foo reads the configuration file" in " ".join(text.split())
    assert "It uses bold and italic words, and a --long option." in text
    assert "comment" not in text and "\\f" not in text and ".SH" not in text
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    assert any("Another paragraph starts here" in p for p in paragraphs)


def test_general_english_mixes_sources_and_excludes_held_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fdir = tmp_path / "fortunes"
    fdir.mkdir()
    (fdir / "f").write_text(FORTUNES)
    man = tmp_path / "man" / "man1"
    man.mkdir(parents=True)
    (man / "foo.1.gz").write_bytes(gzip.compress(ROFF.encode()))
    (man / "bar.1.gz").write_bytes(gzip.compress(b".so man1/foo.1\n"))  # a link: skipped
    monkeypatch.setattr(et, "FORTUNE_DIRS", (fdir,))
    monkeypatch.setattr(et, "MAN_DIR", tmp_path / "man")
    held_out = {et.normalise("The best way to predict the future is to invent it.")}
    out = et.general_english(100, exclude=held_out)
    assert "The best way to predict the future is to invent it." not in out
    assert "It really is the only reliable method." in out
    assert any(s.startswith("Another paragraph starts here") for s in out)
    assert len(out) == len(set(out))
    assert len(et.general_english(2, exclude=held_out)) == 2


WORDNET = """  1 This software and database is being provided to you, the LICENSEE, by Princeton University
00001740 03 n 01 entity 0 003 ~ 00001930 n 0000 | that which is perceived or known or inferred to have its own distinct existence (living or nonliving)
00005787 29 v 01 breathe 0 | draw air into, and expel out of, the lungs; "I can breathe better when the air is clean"; "The patient is breathing"; "go!"
00007846 03 n 01 person 0 | a human being; "there was too much for one person to do"
"""


def test_wordnet_examples_and_glosses(tmp_path: Path) -> None:
    (tmp_path / "data.noun").write_text(WORDNET, encoding="latin-1")
    got = list(et.wordnet_texts(tmp_path))
    assert got == [
        ("gloss", "that which is perceived or known or inferred to have its own distinct existence (living or nonliving)"),
        ("gloss", "draw air into, and expel out of, the lungs"),
        ("example", "I can breathe better when the air is clean"),
        ("example", "The patient is breathing"),  # "go!" (1 word) and "a human being" (3 words) are too short
        ("example", "there was too much for one person to do"),
    ]
