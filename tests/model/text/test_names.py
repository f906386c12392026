"""Person names, companies and products kept as written (``rendition.model.text.names``): found
where the capital says they are names, not where a listed name is a common word, and given stand-ins
by the text pipeline like every other span to keep."""

from __future__ import annotations

import pytest

from rendition.model.text import names, pipeline, spans
from rendition.model.text.glossary import Glossary


@pytest.mark.parametrize(
    ("text", "language", "kept"),
    [
        ("Pierre et Camille arrivent demain.", "fr", ["Pierre", "Camille"]),
        ("Pierre arrive demain.", "fr", ["Pierre"]),  # a French noun opens a sentence with its article
        ("Demande d'abord à Hélène si Émilie vient.", "fr", ["Hélène", "Émilie"]),
        ("« Thomas, viens ici ! »", "fr", ["Thomas"]),
        ("Emily Watson sent the plans to Louise.", "en", ["Emily Watson", "Louise"]),
        ("Jean-Pierre est arrivé.", "fr", ["Jean-Pierre"]),
        ("Tell Mark that the meeting is cancelled.", "en", ["Mark"]),
        ("Grace and Henry arrived.", "en", ["Grace", "Henry"]),
        ("Rose et Paul sont là.", "fr", ["Rose", "Paul"]),
        ("Did Oliver's sister call?", "en", ["Oliver"]),
        ("Open Word and type a letter.", "en", ["Word"]),
        ("Is Renault hiring in Lyon?", "en", ["Renault"]),
    ],
)
def test_names_are_found(text: str, language: str, kept: list[str]) -> None:
    assert [text[a:b] for a, b in names.name_spans(text, language)] == kept


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("La pierre est lourde.", "fr"),
        ("Summer is coming.", "en"),  # a common word first in an English sentence
        ("Hope you are well.", "en"),
        ("Will you come?", "en"),
        ("Mark All as Read", "en"),  # Title Case: a command, not a person
        ("Open the Rose Garden file", "en"),
        ("Word count", "en"),
        ("THOMAS IS HERE", "en"),
        ("Copy C:\\Users\\Emily\\notes.txt", "en"),  # inside a path: the path is the span
        ("My cousin is getting married in June.", "en"),  # months and feasts, always capitalised, are no names
        ("See you in April or May.", "en"),
        ("On se voit à Noël.", "fr"),
        ("It is an old Christian church.", "en"),  # an adjective of a faith, not Christian the person
    ],
)
def test_common_words_and_title_case_are_not_names(text: str, language: str) -> None:
    assert names.name_spans(text, language) == []


@pytest.mark.parametrize(
    ("text", "language", "kept"),
    [
        ("I live in Paris.", "en", []),
        ("We are going to Paris tomorrow.", "en", []),
        ("We flew from Sydney to Paris.", "en", []),
        ("She was born in Florence, like Anna.", "en", ["Anna"]),
        ("Je viens de Nancy.", "fr", []),
        ("Elle est née à Florence.", "fr", []),
        ("Nous habitons près de Paris.", "fr", []),
        # the same names as people: no preposition of place, or "to" / "à" / "from" after another verb
        ("Florence est partie hier.", "fr", ["Florence"]),
        ("Je parle à Florence demain.", "fr", ["Florence"]),
        ("Tell it to Victoria now.", "en", ["Victoria"]),
        ("A letter from Victoria arrived.", "en", ["Victoria"]),
        ("Ask Nancy in the morning.", "en", ["Nancy"]),
    ],
)
def test_a_first_name_that_is_a_town_is_a_place_after_a_preposition_of_place(
    text: str, language: str, kept: list[str]
) -> None:
    assert [text[a:b] for a, b in names.name_spans(text, language)] == kept


def test_a_name_inside_code_stays_part_of_the_code() -> None:
    text = "Run `git log --author Emily` now."
    assert [text[a:b] for a, b in spans.spans(text, "en")] == ["`git log --author Emily`"]


def test_a_common_word_of_one_language_is_a_name_in_the_other() -> None:
    """A French word ("claire": clear), not an English one."""
    assert names.known_names()["Claire"] == (False, True)
    assert names.name_spans("Claire is late.", "en") == [(0, 6)]
    assert names.name_spans("Claire is late.", None) == []  # common in either language: first, it is no sure name


def test_the_list_holds_people_and_brands() -> None:
    listed = names.known_names()
    assert len(listed) > 1500 and names.is_person("Camille") and names.is_person("Jean-Pierre")
    assert "Carrefour" in listed and not names.is_person("Carrefour")


def test_the_pipeline_gives_names_stand_ins_and_puts_them_back() -> None:
    g = pipeline.protect("Pierre et Louise ont appelé Airbus.", pipeline.Protection(), "fr")
    assert g.text == "X et Y ont appelé Z."
    assert Glossary.restore(g.spans, "X and Y called Z.").text == "Pierre and Louise called Airbus."
    assert spans.protect("Pierre et Louise", (), "fr").text == "Pierre et Louise"  # no stand-in free: left as is


def test_an_english_persons_name_stands_in_as_a_first_name_of_its_gender() -> None:
    """In English a person's name takes a first name of its gender the translator copies (a letter
    hides whose the name is: "Does X buy bread?" -> "X achète-t-il"); a name of no known gender, a
    company and a French sentence's names take letters."""
    assert names.gender("Sarah") == "f" and names.gender("Emily Watson") == "f" and names.gender("Pierre Martin") == "m"
    assert names.gender("Camille") is None and names.gender("Airbus") is None
    g = pipeline.protect("Does Sarah know Pierre, Camille and Airbus?", pipeline.Protection(), "en")
    assert g.text == "Does Anna know Paul, X and Y?"
    assert Glossary.restore(g.spans, "Anna connaît-elle Paul, X et Y ?").text == "Sarah connaît-elle Pierre, Camille et Airbus ?"
    taken = pipeline.protect("Anna told Sophie about Paul and Louis.", pipeline.Protection(), "en")
    assert taken.text == "Anna told Lisa about Marc and David."  # (a first name the text holds is no stand-in)
    assert taken.spans.terms == {"Lisa": "Sophie", "Marc": "Paul", "David": "Louis"}
    many = pipeline.protect("Sophie, Louise, Emma and Chloe came.", pipeline.Protection(), "en")
    assert many.text == "Anna, Lisa, Sarah and X came."  # (past the first names of her gender: letters)
    assert pipeline.protect("Sophie ne travaille pas.", pipeline.Protection(), "fr").text == "X ne travaille pas."


def test_a_glossary_term_comes_before_a_name() -> None:
    """A user's glossary may translate a name: its term takes the name before the names do."""
    g = pipeline.protect(
        "Pierre et Louise arrivent.", pipeline.Protection(glossary=Glossary({"Pierre": "Peter"})), "fr"
    )
    assert g.text == "X et Y arrivent."
    text = Glossary.restore(g.spans, "X and Y arrive.").text
    assert Glossary.restore(g.glossary, text).text == "Peter and Louise arrive."
