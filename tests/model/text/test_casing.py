"""Sentences written in capitals: which ones, their sentence case, and capitals back."""

from __future__ import annotations

import pytest

from rendition.model.text import casing
from rendition.model.translation.translator import Translation


@pytest.mark.parametrize("sentence,language,expected", [
    ("WARNING: DO NOT OPEN THE DOOR.", "en", "Warning: do not open the door."),
    ("USER GUIDE", "en", "User guide"),
    ("MY NAME IS SOPHIE AND I LIVE IN PARIS.", "en", "My name is Sophie and I live in Paris."),
    ("JE M'APPELLE PIERRE.", "fr", "Je m'appelle Pierre."),
    ("LA PIERRE EST LOURDE.", "fr", "La pierre est lourde."),
    ("THE FILE %s WAS NOT FOUND.", "en", "The file %s was not found."),
    ("SEE C:\\WINDOWS\\SYSTEM32 FOR THE FILES.", "en", "See C:\\WINDOWS\\SYSTEM32 for the files."),
    ("DO NOT OPEN", "en", "Do not open"),
])  # fmt: skip
def test_a_sentence_in_capitals_in_sentence_case(sentence: str, language: str, expected: str) -> None:
    assert casing.shouted(sentence, language)
    assert casing.quiet(sentence, language)[0] == expected


@pytest.mark.parametrize("sentence", [
    "Warning: do not open the door.", "USB HDMI", "NASA FBI", "OK", "Hello WORLD, how are you?", "12:30 PM", "Press F1 for HELP.",
    "",
])  # fmt: skip
def test_what_is_not_a_sentence_in_capitals(sentence: str) -> None:
    assert not casing.shouted(sentence, "en")


def test_capitals_back_with_the_kept_parts_as_they_were() -> None:
    quiet, kept = casing.quiet("THE FILE %s IS IN /tmp/Data.", "en")
    assert quiet == "The file %s is in /tmp/Data." and kept == ["%s", "/tmp/Data"]
    t = Translation("Le fichier %s est dans /tmp/Data.", -1.0, [5], [("Le fichier %s est dans /tmp/Data.", -1.0), ("Fichier %s : /tmp/Data", -2.0)])
    loud = casing.loud(t, kept)
    assert loud.text == "LE FICHIER %s EST DANS /tmp/Data." and loud.hypotheses[1] == ("FICHIER %s : /tmp/Data", -2.0)
    assert (loud.score, loud.tokens) == (-1.0, [5])
