"""`rendition evaluate`: the sacreBLEU wiring (against sacreBLEU called directly) and the CLI on the shipped model."""

from __future__ import annotations

import json

import pytest
import torch
from sacrebleu.metrics import BLEU, CHRF

from rendition.model.training.evaluate import evaluate, main, word_hits


class LookupTranslator:
    """Translates by looking the source up in a table: the evaluation harness, not a model, is
    under test here (which side is source and which is reference, per direction)."""

    languages = ("en", "fr")
    compute_type = "float32"
    shortlist = None

    def __init__(self, table: dict[str, str]):
        self.table = table
        self.calls: list[tuple[str, str, int, float]] = []

    def translate(self, texts, source, target, beam_size=4, length_penalty=1.0):
        self.calls.append((source, target, beam_size, length_penalty))
        return [type("T", (), {"text": self.table.get(t, "")})() for t in texts]


@pytest.fixture
def split_dir(tmp_path):
    rows = [
        ("The package contains the documentation.", "Le paquet contient la documentation."),
        ("This is a library for XML parsing.", "Ceci est une bibliothèque pour analyser le XML."),
        ("Development files for the library.", "Fichiers de développement pour la bibliothèque."),
    ]
    (tmp_path / "test.en-fr.tsv").write_text("".join(f"{en}\t{fr}\n" for en, fr in rows), encoding="utf-8")
    return tmp_path, rows


def test_scores_equal_sacrebleu_on_the_right_sides(split_dir) -> None:
    path, rows = split_dir
    # en->fr is perfect; fr->en gets a degraded English side
    table = {en: fr for en, fr in rows} | {fr: en.replace("the", "a") for en, fr in rows}
    tr = LookupTranslator(table)
    res = evaluate(tr, split="test", splits_dir=path, beam_size=3, length_penalty=0.6)
    assert set(res) == {"en-fr", "fr-en"}
    assert res["en-fr"]["bleu"] == 100.0 and res["en-fr"]["chrf"] == 100.0
    hyps, refs = [en.replace("the", "a") for en, _ in rows], [en for en, _ in rows]
    assert res["fr-en"]["bleu"] == round(BLEU().corpus_score(hyps, [refs]).score, 2) < 100
    assert res["fr-en"]["chrf"] == round(CHRF().corpus_score(hyps, [refs]).score, 2)
    assert res["fr-en"]["sentences"] == 3 and "tok:13a" in res["fr-en"]["bleu_signature"]
    assert tr.calls == [("en", "fr", 3, 0.6), ("fr", "en", 3, 0.6)]


def test_daily_sets_list_the_words_each_translation_misses(tmp_path) -> None:
    rows = [("The dog sleeps under the bed.", "Le chien dort sous le lit."), ("My aunt buys apples.", "Ma tante achète des pommes.")]
    (tmp_path / "test.daily.en-fr.tsv").write_text("".join(f"{en}\t{fr}\n" for en, fr in rows), encoding="utf-8")
    (tmp_path / "test.daily.words.tsv").write_text(
        "# header\nanimals\tThe dog sleeps under the bed.\tdog|bed\tchien|lit\nfamily\tMy aunt buys apples.\taunt|apple*\ttante|pomme*\n", encoding="utf-8"
    )
    table = {en: fr for en, fr in rows} | {"Le chien dort sous le lit.": "The dort under the bed.", "Ma tante achète des pommes.": "My aunt buys apples."}
    res = evaluate(LookupTranslator(table), pairs=("daily.en-fr",), split="test", splits_dir=tmp_path)
    assert res["daily en-fr"]["words"]["misses"] == []
    assert res["daily fr-en"]["words"]["misses"] == [{"source": "Le chien dort sous le lit.", "output": "The dort under the bed.", "missing": ["dog"]}]
    assert res["daily fr-en"]["words"]["hit_rate"] == 75.0
    out = word_hits(["Elle porte un pull.", "Un chat."], [["pull", "vert*"], ["chat"]], ["clothes", "animals"], ["Elle porte un pull vert.", "Un chat."], sources=["a", "b"])
    assert out["misses"] == [{"source": "a", "output": "Elle porte un pull.", "missing": ["vert*"]}]


def test_cli_on_the_shipped_model_writes_json(tmp_path, capsys) -> None:
    out = tmp_path / "eval.json"
    threads = torch.get_num_threads()
    try:
        main(["--sets", "en-fr", "en-de", "--limit", "4", "--threads", "1", "--length-penalty", "0.8", "--output", str(out)])
    finally:
        torch.set_num_threads(threads)  # --threads is process-wide; leave other tests as they were
    printed = capsys.readouterr().out
    res = json.loads(out.read_text())
    assert set(res) == {"en-fr", "fr-en"}
    assert "en-de: skipped, the translator's languages are en, fr" in printed  # the shipped translator has no German
    for direction, r in res.items():
        assert r["sentences"] == 4 and r["length_penalty"] == 0.8 and r["beam_size"] == 4
        assert 5 < r["bleu"] <= 100 and 20 < r["chrf"] <= 100
        assert f"{direction}: BLEU {r['bleu']:.2f}" in printed


def test_german_sets_are_read_by_pair(tmp_path) -> None:
    rows = [("The package contains the documentation.", "Das Paket enthält die Dokumentation."), ("Development files.", "Entwicklungsdateien.")]
    (tmp_path / "test.ui.en-de.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in rows), encoding="utf-8")
    german = LookupTranslator({en: de for en, de in rows} | {de: en for en, de in rows})
    german.languages = ("en", "de")
    res = evaluate(german, ["ui.en-de"], splits_dir=tmp_path)
    assert set(res) == {"ui en-de", "ui de-en"} and all(r["bleu"] == 100 and r["sentences"] == 2 for r in res.values())
    assert evaluate(LookupTranslator({}), ["ui.en-de"], splits_dir=tmp_path) == {}


def test_a_set_without_a_split_file_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--sets", "nosuch.en-de"])
    assert exc.value.code == 2 and "no test split for nosuch.en-de" in capsys.readouterr().err


def test_paired_bootstrap_interval_holds_the_difference_and_is_sacrebleus() -> None:
    import random

    from rendition.model.training.evaluate import paired_bootstrap

    rng = random.Random(3)
    words = "the a cat dog sat ran on under mat bed house garden".split()
    refs = [" ".join(rng.choice(words) for _ in range(9)) for _ in range(200)]
    worse = [r if i % 3 else " ".join(r.split()[:5]) for i, r in enumerate(refs)]  # a third cut short
    diff, lo, hi = paired_bootstrap(worse, refs, refs, resamples=300)
    assert diff == pytest.approx(100 - BLEU().corpus_score(worse, [refs]).score) and lo <= diff <= hi and lo > 0
    same, lo0, hi0 = paired_bootstrap(refs, refs, refs, resamples=50)
    assert same == lo0 == hi0 == 0
    noisy = [r if i % 7 else r.replace("the", "a") for i, r in enumerate(refs)]
    d, lo, hi = paired_bootstrap(noisy, worse, refs, resamples=300)
    assert lo <= d <= hi and d == pytest.approx(BLEU().corpus_score(worse, [refs]).score - BLEU().corpus_score(noisy, [refs]).score)


def test_cli_compares_two_translators(tmp_path, capsys) -> None:
    from rendition.model.translation.translator import DEFAULT_TRANSLATOR

    out = tmp_path / "eval.json"
    threads = torch.get_num_threads()
    try:
        main(["--sets", "en-fr", "--limit", "6", "--threads", "1", "--against", str(DEFAULT_TRANSLATOR), "--output", str(out)])
    finally:
        torch.set_num_threads(threads)
    res = json.loads(out.read_text())
    for r in res.values():  # the same model both sides: no difference, none in any resample
        assert r["against"]["bleu"] == r["bleu"] and r["against"]["bleu_difference"] == 0 and r["against"]["interval_95"] == [0, 0]
        assert "hypotheses" not in r
    assert "difference +0.00 [+0.00, +0.00] (95%, paired bootstrap)" in capsys.readouterr().out
