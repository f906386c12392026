"""General English text for the encoder's distillation corpus (rendition.model.training.english_text)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from rendition.model.training import english_text as et

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


DING = """# Version :: 1.9 (a header line)
Katze {f} | Die Katze schläft auf dem Sofa. | Sie hat zwei Katzen. :: cat | The cat is sleeping on the sofa. | She has two cats.
Wie viel kostet das? :: How much is that?
Haus {n} | ein großes Haus :: house | a big house
Apfel {m} | Er aß einen Apfel. :: apple | He ate an apple {adj}.
nur eine Seite | Zweite Seite :: only one side
"""

MONSPEAK = """##########
# speech of monsters
%%%%
_shouts_

shouts

yells
%%%%
orc warrior

@The_monster@ shouts, "Get out of my cave, you little thief!"

@The_monster@ says, "Hello there, @player_name@!"

@The_monster@ grunts.
%%%%
"""

MONSTERS = """%%%%
goblin

A small and ugly creature that lives in dark caves under the hills. It is rarely seen alone.
%%%%
Sigmund

{{ return "a templated description that must be left out of the text" }}
%%%%
"""


def test_extra_sources_are_read_from_their_package_formats(tmp_path: Path) -> None:
    """``extra_english`` over a ``fetch-extra`` tree: Ding example sentences (aligned parts, no
    annotated or headword parts), Crawl speech without templates and prose, a dictd database,
    fortunes and chatterbot conversations."""
    deb, pypi = tmp_path / "deb", tmp_path / "pypi"
    (deb / "usr/share/trans").mkdir(parents=True)
    (deb / "usr/share/trans/de-en").write_text(DING, encoding="utf-8")
    assert list(et.ding_pairs(deb / "usr/share/trans/de-en")) == [
        ("The cat is sleeping on the sofa.", "Die Katze schläft auf dem Sofa."),
        ("She has two cats.", "Sie hat zwei Katzen."),
        ("How much is that?", "Wie viel kostet das?"),
    ]  # not "a big house" (a phrase), not the {adj}-annotated one, not the misaligned line
    crawl = deb / "usr/share/crawl/dat"
    (crawl / "database").mkdir(parents=True)
    (crawl / "descript").mkdir()
    (crawl / "database/monspeak.txt").write_text(MONSPEAK)
    (crawl / "descript/monsters.txt").write_text(MONSTERS)
    es = deb / "usr/share/games/endless-sky/data"
    es.mkdir(parents=True)
    (es / "intro missions.txt").write_text(
        'mission "Intro"\n\tdescription "Bring the cargo to the station before it spoils."\n'
        "\ton offer\n\t\tconversation\n"
        '\t\t\t`\t"Is everything okay?" you ask. She nods.`\n'
        "\t\t\t\t`Pay <payment> to the captain.`\n"
    )
    (deb / "usr/share/dictd").mkdir()
    with gzip.open(deb / "usr/share/dictd/devil.dict.dz", "wt") as f:
        f.write("ABSURDITY, n.  A statement or belief manifestly inconsistent with one's own opinion.\n\nACADEME, n.  An old school.\n")
    (deb / "usr/share/games/fortunes").mkdir(parents=True)
    (deb / "usr/share/games/fortunes/hints").write_text(FORTUNES)
    chat = pypi / "chatterbot_corpus/data/english"
    chat.mkdir(parents=True)
    (chat / "greetings.yml").write_text("categories:\n- greetings\nconversations:\n- - Hello, how are you?\n  - I am doing well, thanks.\n- - Hi\n  - Good to see you again!\n")
    got = list(et.extra_english(tmp_path))
    assert got == [
        ("ding", "The cat is sleeping on the sofa."),
        ("ding", "She has two cats."),
        ("ding", "How much is that?"),
        ("crawl-speech", "Get out of my cave, you little thief!"),  # the @player_name@ greeting is a template
        ("crawl-prose", "A small and ugly creature that lives in dark caves under the hills."),
        ("crawl-prose", "It is rarely seen alone."),
        ("endless-sky", "Bring the cargo to the station before it spoils."),
        ("endless-sky", '"Is everything okay?" you ask.'),
        ("endless-sky", "She nods."),  # not the <payment> template
        ("devil", "A statement or belief manifestly inconsistent with one's own opinion."),
        ("fortunes", "Whenever you find yourself on the side of the majority, it is time to pause and reflect."),
        ("fortunes", "The best way to predict the future is to invent it."),
        ("fortunes", "It really is the only reliable method."),
        ("chat", "Hello, how are you?"),
        ("chat", "I am doing well, thanks."),
        ("chat", "Good to see you again!"),  # "Hi" is one word
    ]
    assert list(et.extra_english(tmp_path / "missing")) == []
