"""Sentence splitting for translation: sentences come out whole and in order, and putting them
back between the original gaps gives the original text byte for byte (spacing, line breaks,
blank lines between paragraphs)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rendition.model.text.segment import Segmented, split

TEXTS = [
    "Hello world.",
    "  Leading and trailing spaces.  ",
    "Dr. Smith arrived at 3 p.m. yesterday.  He said: \"It's fine!\" Then he left... Really? Yes.",
    "First paragraph, one sentence. Second sentence.\n\nSecond paragraph.\r\nA Windows line.\n",
    "Il a dit « bonjour ! » et puis il est parti. C'est la version 2.5, p. ex. aujourd'hui.",
    "Line one\nline two without a stop\n\n\n   indented line.",
    "no punctuation at all",
]


@pytest.mark.parametrize("text", TEXTS)
def test_join_of_the_sentences_is_the_original_text(text: str) -> None:
    doc = split(text, "en")
    assert doc.join(doc.sentences) == text
    assert len(doc.gaps) == len(doc.sentences) + 1
    assert all(s == s.strip() and s for s in doc.sentences)
    assert all(not g.strip() for g in doc.gaps)  # everything visible is inside a sentence


def test_sentences_and_gaps() -> None:
    doc = split("Hello there.  How are you?\n\nBye.", "en")
    assert doc.sentences == ["Hello there.", "How are you?", "Bye."]
    assert doc.gaps == ["", "  ", "\n\n", ""]
    assert doc.join(["Salut.", "Ça va ?", "Au revoir."]) == "Salut.  Ça va ?\n\nAu revoir."


def test_abbreviations_and_numbers_do_not_split() -> None:
    assert split("Dr. Smith went to Washington D.C. yesterday. Version 2.5 is out.", "en").sentences == [
        "Dr. Smith went to Washington D.C. yesterday.",
        "Version 2.5 is out.",
    ]
    assert split("Il est parti. Elle est restée ! Pourquoi ?", "fr").sentences == [
        "Il est parti.",
        "Elle est restée !",
        "Pourquoi ?",
    ]


def test_every_line_break_is_a_boundary() -> None:
    doc = split("a title\nthe body goes on\u2028and on", "en")
    assert doc.sentences == ["a title", "the body goes on", "and on"]
    assert doc.gaps == ["", "\n", "\u2028", ""]


def test_join_refuses_a_wrong_number_of_pieces() -> None:
    with pytest.raises(ValueError, match="2 pieces for 1 sentences"):
        Segmented(["a"], ["", ""]).join(["x", "y"])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\r\t,«»\u00a0\u2028É")), max_size=80), st.sampled_from(["en", "fr", "de"]))
def test_any_text_round_trips(text: str, language: str) -> None:
    doc = split(text, language)
    assert doc.join(doc.sentences) == text
    assert all(s.strip() == s and s for s in doc.sentences)
