"""Language identification over a model's languages, and the texts it is sure are in none of them
(checked against the committed splits: no English or French side is taken for another language)."""

from __future__ import annotations

import pytest

from rendition.model.text.language_id import LanguageDetector, Runs, language_name
from rendition.model.training.data import SPLITS_DIR, read_tsv


@pytest.fixture(scope="module")
def detector() -> LanguageDetector:
    return LanguageDetector(("en", "fr"))


def test_detects_among_the_models_languages(detector: LanguageDetector) -> None:
    ranked = detector.detect("Bonjour tout le monde, comment allez-vous ?")
    assert [lang for lang, _ in ranked] == ["fr", "en"] and sum(p for _, p in ranked) == pytest.approx(1.0)


@pytest.mark.parametrize("text,lang", [
    ("Guten Morgen, wie geht es dir heute?", "de"), ("Tengo hambre y quiero comer algo.", "es"),
    ("Ik heb honger, laten we iets eten.", "nl"), ("Ho fame, andiamo a mangiare qualcosa.", "it"),
])  # fmt: skip
def test_a_sentence_in_another_language_is_foreign(detector: LanguageDetector, text: str, lang: str) -> None:
    found = detector.foreign(text)
    assert found is not None and found[0] == lang and found[1] >= 0.95


def test_short_or_served_texts_are_never_foreign(detector: LanguageDetector) -> None:
    assert detector.foreign("Hallo") is None and detector.foreign("Danke schön") is None  # too short to be sure
    assert detector.foreign("Pizza margherita, s'il vous plaît.") is None
    sides = [s for path in sorted(SPLITS_DIR.glob("test.*.en-fr.tsv")) for p in read_tsv(path) for s in (p.src, p.tgt)]
    assert len(sides) > 9_000 and not [s for s in sides if detector.foreign(s)]
    assert LanguageDetector(("de", "en")).foreign("Guten Morgen, wie geht es dir heute?") is None  # served there
    assert language_name("de") == "German (de)" and language_name("xx") == "xx"


def test_runs_cut_a_mixed_text_at_its_sentences(detector: LanguageDetector) -> None:
    text = "  I bought strawberries at the market. Ma sœur habite dans une petite maison près de la rivière.\n\nMy uncle has three children."
    runs = detector.runs(text, "fr")
    assert runs == [
        ("  I bought strawberries at the market. ", "en"),
        ("Ma sœur habite dans une petite maison près de la rivière.\n\n", "fr"),
        ("My uncle has three children.", "en"),
    ]
    assert "".join(run for run, _ in runs) == text


def test_runs_of_many_texts_gather_per_language_and_come_back_in_order(detector: LanguageDetector) -> None:
    texts = [
        "I bought strawberries at the market. Ma sœur habite dans une petite maison près de la rivière.",
        "Mon oncle a trois enfants et deux chiens.",
        "",
        "The train leaves at noon. Le musée ferme le lundi et le mardi. My uncle has three children.",
    ]
    runs = Runs.gather(detector.runs(t, "en") for t in texts)
    assert runs.by_language == {
        "en": ["I bought strawberries at the market. ", "", "The train leaves at noon. ", "My uncle has three children."],
        "fr": ["Ma sœur habite dans une petite maison près de la rivière.", "Mon oncle a trois enfants et deux chiens.", "Le musée ferme le lundi et le mardi. "],
    }
    assert ["".join(rs) for rs in runs.put_back(runs.by_language)] == texts  # each text's runs, in order
    upper = {lang: [r.upper() for r in group] for lang, group in runs.by_language.items()}
    assert ["".join(rs) for rs in runs.put_back(upper)] == [t.upper() for t in texts]
    lengths = {lang: [len(r) for r in group] for lang, group in runs.by_language.items()}
    assert [sum(n) for n in runs.put_back(lengths)] == [len(t) for t in texts]
    single = Runs.single(texts, "fr")
    assert single.by_language == {"fr": texts} and single.put_back(single.by_language) == [[t] for t in texts]
    assert Runs.single([], "fr").put_back({}) == []


def test_a_short_sentence_stays_in_the_texts_language(detector: LanguageDetector) -> None:
    # "Merci !" and "OK." are too short to be sure of: they stay with the text's language, not the run before
    text = "I am fine, thank you very much. Merci ! Comment allez-vous aujourd'hui ? OK."
    assert detector.runs(text, "fr") == [("I am fine, thank you very much. ", "en"), ("Merci ! Comment allez-vous aujourd'hui ? OK.", "fr")]
    assert detector.runs("Hello. Bonjour.", "en") == [("Hello. Bonjour.", "en")]


def test_runs_never_cut_a_text_in_one_language(detector: LanguageDetector) -> None:
    # each side of the committed splits, several sentences at a time: one run in its own language
    for path in sorted(SPLITS_DIR.glob("test.*.en-fr.tsv")):
        pairs = read_tsv(path)
        for lang, sides in (("en", [p.src for p in pairs]), ("fr", [p.tgt for p in pairs])):
            for k in range(0, len(sides), 4):
                text = " ".join(s if s.rstrip()[-1:] in ".?!" else s + "." for s in sides[k : k + 4] if s.strip())
                assert detector.runs(text, lang) == [(text, lang)], (path.name, text)
    assert LanguageDetector(("en",)).runs("Hello there, friend. Ma sœur habite à Lyon.", "en") == [("Hello there, friend. Ma sœur habite à Lyon.", "en")]
