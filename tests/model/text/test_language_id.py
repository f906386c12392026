"""Language identification over a model's languages, and the texts it is sure are in none of them
(checked against the committed splits: no English or French side is taken for another language)."""

from __future__ import annotations

import pytest

from rendition.model.text.language_id import LanguageDetector, language_name
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
