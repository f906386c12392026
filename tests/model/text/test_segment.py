"""Sentence splitting for translation: sentences come out whole and in order, and putting them
back between the original gaps gives the original text byte for byte (spacing, line breaks,
blank lines between paragraphs)."""

from __future__ import annotations

import re

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
    assert all(not re.sub(r'[\s"«»,]', "", g) for g in doc.gaps)  # all but a quote's marks is in a sentence


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


@pytest.mark.parametrize(
    ("text", "language", "sentences", "gaps", "continued"),
    [
        ('"Where are you?" she asked.', "en", ["Where are you?", "she asked."], ['"', '" ', ""], {1}),
        ('She asked: "Where are you?"', "en", ["She asked:", "Where are you?"], ["", ' "', '"'], set()),
        ('"I am tired. Let us go home," he said.', "en", ["I am tired.", "Let us go home", "he said."], ['"', " ", '," ', ""], {2}),
        ("« Je suis fatigué », dit-il.", "fr", ["Je suis fatigué", "dit-il."], ["« ", " », ", ""], {1}),
        ("(See the manual.) Then run it.", "en", ["See the manual.", "Then run it."], ["(", ") ", ""], set()),
        ('"Emily is here. See https://example.com." said Paul.', "en", ["Emily is here.", "See https://example.com.", "said Paul."], ['"', " ", '" ', ""], {2}),
        ("It said: 'I am here. Do not wait.'", "en", ["It said:", "I am here.", "Do not wait."], ["", " '", " ", "'"], set()),
    ],
)
def test_a_quoted_sentence_is_a_sentence_of_its_own(
    text: str, language: str, sentences: list[str], gaps: list[str], continued: set[int]
) -> None:
    doc = split(text, language)
    assert (doc.sentences, doc.gaps, set(doc.continued)) == (sentences, gaps, continued)
    assert split(text, language, quotes=False).sentences == [text]


@pytest.mark.parametrize(
    "text",
    [
        'QasMixer is a mixer for ALSA\'s "Simple Mixer Interface" and more.',  # a title in quotes
        "Utilisez le menu « Fichier - Exporter », sinon tout est perdu !",  # a title, then a comma
        "AES (Advanced Encryption Standard), also known as Rijndael.",  # a name spelt out
        'He said "hello" to me.',  # one word
        "I don't know what it's 'for'.",  # apostrophes
        'Run `echo "Hello world."` now.',  # inside code
    ],
)
def test_a_quoted_title_or_word_stays_in_its_sentence(text: str) -> None:
    assert split(text, "en").sentences == [text]


def test_after_a_quote_a_pronoun_keeps_its_small_letter() -> None:
    doc = split('"Where are you?" she asked.  "Who is there?" asked Paul.', "en")
    assert doc.join(["Où es-tu ?", "Elle a demandé.", "Qui est là ?", "Paul a demandé."]) == (
        '"Où es-tu ?" elle a demandé.  "Qui est là ?" Paul a demandé.'
    )


def test_join_refuses_a_wrong_number_of_pieces() -> None:
    with pytest.raises(ValueError, match="2 pieces for 1 sentences"):
        Segmented(["a"], ["", ""]).join(["x", "y"])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\r\t,«»\u00a0\u2028É\"'“”()")), max_size=80), st.sampled_from(["en", "fr", "de"]))
def test_any_text_round_trips(text: str, language: str) -> None:
    doc = split(text, language)
    assert doc.join(doc.sentences) == text
    assert all(s.strip() == s and s for s in doc.sentences)
