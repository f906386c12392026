"""``benchmarks/length_cap_check.py`` on a slice of every held-out split: no legitimate text,
alone or doubled, is refused for length by the service's rules (the full run's counts are in
docs/api.md)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import length_cap_check as lc  # noqa: E402

from rendition.model.training.data import SPLITS_DIR, read_tsv  # noqa: E402
from rendition.model.translation.translator import Translator  # noqa: E402


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


@pytest.mark.parametrize("split", ["test.en-fr.tsv", "test.ui.en-fr.tsv", "test.help.en-fr.tsv", "test.dialogue.en-fr.tsv"])
def test_held_out_sentences_alone_and_doubled_are_never_refused(shipped: Translator, split: str) -> None:
    pairs = read_tsv(SPLITS_DIR / split)
    some = pairs[:2]
    for source, target, lines in (("en", "fr", [p.src for p in some]), ("fr", "en", [p.tgt for p in some])):
        texts = lines + [f"{x} {x}" for x in lines]
        counts, refused = lc.check(shipped, texts, source, target, beam=4, max_length=256, ngram=lc.default_fallback_ngram())
        assert counts.texts == 4 and counts.sentences >= 4
        assert refused == [] and counts.refused == 0
