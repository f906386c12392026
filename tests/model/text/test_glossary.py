"""Glossaries (``rendition.model.text.glossary``): matching and restoring on their own, then with the
shipped translator: the target terms come out as given, and a text without a term is translated
exactly as without the glossary."""

from __future__ import annotations

import json

import pytest

from rendition.model.text.cli import translate_lines
from rendition.model.text.glossary import STAND_INS, Glossary, GlossaryError, GlossaryLimits, load_glossary
from rendition.model.translation.translator import Translator


def test_terms_match_ignoring_case_on_whole_words_longest_first() -> None:
    g = Glossary.from_mapping({"file": "fichier", "file manager": "gestionnaire de fichiers"})
    m = g.protect("Open the File  Manager, then a FILE; profile files stay.")
    assert m.text == "Open the X, then a Y; profile files stay."  # "profile", "files": not the word "file"
    assert m.terms == {"X": "gestionnaire de fichiers", "Y": "FICHIER"}  # (the text writes FILE in capitals)
    assert g.restore(m, "Ouvrez le X, puis un Y ; les fichiers restent.").text == (
        "Ouvrez le gestionnaire de fichiers, puis un FICHIER ; les fichiers restent."
    )


def test_a_term_written_in_capitals_gets_its_target_in_capitals_unless_the_glossary_writes_it_so() -> None:
    g = Glossary.from_mapping({"save": "enregistrer", "GPU": "processeur graphique", "a": "un"})
    m = g.protect("Press SAVE, then Save; the GPU and A.")
    assert m.terms == {"X": "ENREGISTRER", "Y": "enregistrer", "Z": "processeur graphique", "W": "un"}  # (one letter: not shouted)


def test_a_text_without_terms_is_left_exactly_as_it_was() -> None:
    g = Glossary.from_mapping({"kernel": "noyau"})
    for text in ("Nothing to see here.", "kernels are plural", "  spaced   text ", ""):
        m = g.protect(text)
        assert m.text == text and not m.terms
        assert g.restore(m, "anything at all").text == "anything at all"


def test_stand_ins_already_in_the_text_are_skipped() -> None:
    g = Glossary.from_mapping({"window": "fenêtre"})
    m = g.protect("Move X to the window")
    assert m.text == "Move X to the Y" and m.terms == {"Y": "fenêtre"}
    many = Glossary.from_mapping({f"term{i}": f"terme{i}" for i in range(len(STAND_INS) + 2)})
    m = many.protect(" ".join(f"term{i}" for i in range(len(STAND_INS) + 2)))
    assert len(m.terms) == len(STAND_INS)  # the rest are translated freely
    assert m.text.endswith(f"term{len(STAND_INS)} term{len(STAND_INS) + 1}")


def test_a_lost_stand_in_is_appended_and_counted_and_a_capital_kept() -> None:
    g = Glossary.from_mapping({"trash": "corbeille", "folder": "dossier"})
    m = g.protect("Trash the folder.")
    assert m.text == "X the Y."
    r = g.restore(m, "X le répertoire.")
    assert r.text == "Corbeille le répertoire (dossier)." and (r.placed, r.missing) == (1, 1)
    r = g.restore(m, "Mettez Y à la X !")  # not at the start: the term as given
    assert r.text == "Mettez dossier à la corbeille !" and r.missing == 0


def test_a_target_term_holding_a_stand_in_is_not_replaced_again() -> None:
    g = Glossary.from_mapping({"axis": "axe Y", "graph": "graphe"})
    m = g.protect("the axis of the graph")
    assert g.restore(m, "l'X du Y").text == "l'axe Y du graphe"


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (["file", "fichier"], "object of source term -> target term"),
        ({"file": 3}, "must be a string"),
        ({"": "vide"}, "is empty"),
        ({"file": "   "}, "is empty"),
        ({"--": "tiret"}, "no letter or digit"),
        ({"a\tb": "c"}, "tab"),
        ({"File": "fichier", "file": "dossier"}, "given twice"),
        ({"x" * 201: "y"}, "the limit is 200"),
        ({f"t{i}": "u" for i in range(1001)}, "more than 1000 terms"),
    ],
)
def test_bad_glossaries_are_refused_naming_the_rule(mapping, message: str) -> None:
    with pytest.raises(GlossaryError, match=message):
        Glossary.from_mapping(mapping, GlossaryLimits())


def test_tsv_and_json_files(tmp_path) -> None:
    tsv = tmp_path / "g.tsv"
    tsv.write_text("# comment\nfile\tfichier\n\nkernel\tnoyau\n", encoding="utf-8")
    assert load_glossary(tsv).terms == {"file": "fichier", "kernel": "noyau"}
    js = tmp_path / "g.json"
    js.write_text(json.dumps({"file": "fichier"}), encoding="utf-8")
    assert load_glossary(js).terms == {"file": "fichier"}
    bad = tmp_path / "bad.tsv"
    bad.write_text("file\tfichier\nno tab here\n", encoding="utf-8")
    with pytest.raises(GlossaryError, match="line 2: expected source<TAB>target"):
        load_glossary(bad)


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


def test_the_shipped_translator_puts_the_terms_and_leaves_other_lines_alone(shipped: Translator) -> None:
    g = Glossary.from_mapping({"kernel": "noyau Linux", "trash": "poubelle", "bookmark": "marque-page"})
    lines = [
        "The kernel could not be updated.",
        "Empty the trash before you add a bookmark.",
        "This package contains the development files.",  # no term
        "",
        "Click on the button to save the document.",  # no term
    ]
    with_glossary = translate_lines(shipped, lines, "en", "fr", progress=False, glossary=g, beam_size=2)
    plain = translate_lines(shipped, lines, "en", "fr", progress=False, beam_size=2)
    assert "noyau Linux" in with_glossary[0]
    assert "poubelle" in with_glossary[1] and "marque-page" in with_glossary[1]
    assert with_glossary[2:] == plain[2:]  # identical where no term occurs
    assert with_glossary[3] == ""
