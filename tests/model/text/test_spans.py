"""The spans a translation must keep (``rendition.model.text.spans``): found by kind, replaced by
stand-ins the text does not hold, and put back verbatim by ``Glossary.restore``."""

from __future__ import annotations

import pytest

from rendition.model.text import spans
from rendition.model.text.glossary import Glossary
from rendition.model.text.stand_ins import STAND_INS


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("See https://example.com/a?b=c. Then mail me@example.org.", ["https://example.com/a?b=c", "me@example.org"]),
        (r"Open C:\Users\Bob\report.docx or \\nas\share now.", [r"C:\Users\Bob\report.docx", r"\\nas\share"]),
        ("Copy ~/.ssh/id_rsa.pub to /etc/ssh/keys/.", ["~/.ssh/id_rsa.pub", "/etc/ssh/keys/"]),
        ("Run `make all -j4` with --dry-run or --jobs=4.", ["`make all -j4`", "--dry-run", "--jobs=4"]),
        ("Upgrade to 2.4.1 or v3.2 today.", ["2.4.1", "v3.2"]),
        ("Call get_user_name on myWidget via os.path.join.", ["get_user_name", "myWidget", "os.path.join"]),
        ("Happy birthday 🎂🎉! See you 👋", ["🎂🎉", "👋"]),
        ("A family 👨\u200d👩\u200d👧, a flag 🇫🇷, a thumb 👍🏽 and a heart ❤️.", ["👨\u200d👩\u200d👧", "🇫🇷", "👍🏽", "❤️"]),
    ],
)
def test_each_kind_is_found(text: str, kept: list[str]) -> None:
    assert [text[a:b] for a, b in spans.spans(text)] == kept


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("Then do git commit --amend and git push.", ["git commit --amend", "git push"]),
        ("Run sudo apt install vlc to get the player.", ["sudo apt install vlc"]),
        ("Lancez sudo shutdown -h maintenant.", ["sudo shutdown -h"]),
        ("He typed rm -rf ~/tmp/cache, then ls -la.", ["rm -rf ~/tmp/cache", "ls -la"]),
        ("Build it with make install -j4 or go build.", ["make install -j4", "go build"]),
        ("Use snap install vlc; enter pwd.", ["snap install vlc", "pwd"]),
        ("Tapez uname -a puis mkdir /srv/data.", ["uname -a", "mkdir /srv/data"]),
    ],
)
def test_command_lines_in_running_text_are_found(text: str, kept: list[str]) -> None:
    """A known program with its subcommand, a package after an install verb, options, paths and
    numbers; the options and paths inside it are not spans of their own."""
    assert [text[a:b] for a, b in spans.spans(text)] == kept


@pytest.mark.parametrize(
    "text",
    [
        "Let's go to the cinema and make a cake.",  # make, go: only before their usual targets
        "A steel snap fastener and a cargo space.",  # everyday words that also name programs
        "The child sudo process runs in sudo mode.",  # sudo: before a program or an admin command
        "This package is separated from gcc for emacs users.",  # a program named in prose
        "Un bogue très ancien d'emacs.",
        "Don't make tests hard; make sure git is installed.",
    ],
)
def test_programs_named_in_prose_are_not_command_lines(text: str) -> None:
    assert spans.command_spans(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "The U.S. and e.g. Canada.",
        "Half of it, 1/2, and/or more.",
        "A well-known e-mail client.",
        "It costs 1.5 euros.",
        "le type %qT enfreint la règle, %qD aussi",  # gcc's conversions, which the corpus keeps as they are
        "Impossible de créer le contexte OpenGL de HomeBank.",  # product names: the translator's to place
        "It costs 5€, it is 25 °C → go © 2024.",  # currency, degrees, arrows, signs: the tokenizer's own
    ],
)
def test_ordinary_text_has_no_span(text: str) -> None:
    assert spans.spans(text) == []
    assert spans.protect(text, STAND_INS).text == text


def test_stand_ins_are_free_ones_and_come_back_verbatim() -> None:
    text = "X marks /srv/app and `ls -la`."
    marked = spans.protect(text, STAND_INS)
    assert marked.text == "X marks Y and Z." and marked.terms == {"Y": "/srv/app", "Z": "`ls -la`"}
    assert Glossary.restore(marked, "X marque Y et Z.").text == "X marque /srv/app et `ls -la`."
    lost = Glossary.restore(marked, "X marque Y.")  # a lost stand-in: its span appended, not dropped
    assert lost.text == "X marque /srv/app (`ls -la`)." and lost.missing == 1


def test_spans_beyond_the_stand_ins_stay_as_they_are() -> None:
    paths = [f"/p{i}/q" for i in range(len(STAND_INS) + 2)]
    marked = spans.protect(" ".join(paths), STAND_INS)
    assert len(marked.terms) == len(STAND_INS) and marked.text.endswith(" ".join(paths[-2:]))


def test_the_quick_check_passes_every_sentence_that_holds_a_span() -> None:
    """``spans`` runs the patterns only on text that holds one of the characters they all need."""
    from rendition.model.training.data import SPLITS_DIR

    texts = [
        side
        for f in sorted(SPLITS_DIR.glob("test.*.tsv"))
        for line in f.read_text(encoding="utf-8").splitlines()
        for side in line.split("\t")[:2]
    ]
    held = [t for t in texts if any(True for _ in spans.SPAN.finditer(t))]
    assert len(held) > 300 and all(spans._MAYBE.search(t) for t in held)
