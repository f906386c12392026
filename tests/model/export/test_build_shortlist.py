"""The vocabulary shortlist's builder (``rendition.model.export.shortlist``): its scores against
hand-computed ones, the lists it keeps, the ``rendition build-shortlist`` command on a small corpus,
and CTranslate2's vocabulary map of a shortlist."""

from __future__ import annotations

import json
import shutil

import pytest

from rendition.model.export import shortlist as builder
from rendition.model.export.shortlist import build_from_pairs, cooccurrence_scores
from rendition.model.tokenizer import EOS_ID, UNK_ID, Tokenizer
from rendition.model.translation.shortlist import FILENAME, Shortlist, ShortlistError
from rendition.model.translation.translator import DEFAULT_TRANSLATOR
from tests.model.shortlist_pairs import HAND, HAND_SRC, HAND_TGT


@pytest.mark.parametrize("score", ["p", "dice"])
def test_cooccurrence_scores_equal_the_hand_computed_ones(score: str) -> None:
    P = cooccurrence_scores(HAND_SRC, HAND_TGT, 12, score).tocoo()
    got = {(int(s), int(t)): float(v) for s, t, v in zip(P.row, P.col, P.data)}
    assert got == pytest.approx(HAND[score])


def test_the_lists_leave_out_the_frequent_tokens_and_keep_the_best_first() -> None:
    # target counts: 7 twice, 8 twice, 9 once -> ranking 7, 8, 9 (ties by id); frequent=1: 7 always on
    sl = build_from_pairs(HAND_SRC, HAND_TGT, 12, top_k=2, frequent=1)
    assert sl.ranking.tolist() == [7, 8, 9]
    assert sl.list_of(4).tolist() == [8]
    assert sl.list_of(5).tolist() == [8, 9]  # p = 1, then 0.5
    assert sl.list_of(6).tolist() == [] and sl.list_of(7).tolist() == []
    assert sl.candidates([5]).tolist() == sorted({UNK_ID, EOS_ID, 7, 5, 8, 9})
    assert sl.candidates([6, 11]).tolist() == sorted({UNK_ID, EOS_ID, 7, 6, 11})
    one = build_from_pairs(HAND_SRC, HAND_TGT, 12, top_k=1, frequent=1)
    assert one.list_of(5).tolist() == [8]


def test_build_shortlist_command_on_a_small_corpus(tmp_path) -> None:
    """Both directions: an English source word lists its French translation and the reverse."""
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    for name in ("sentencepiece.model", "config.json"):
        shutil.copy(DEFAULT_TRANSLATOR / name, model_dir / name)
    rows = ["test\tThe cat sleeps.\tLe chat dort.", "test\tA black cat.\tUn chat noir.", "test\tThe dog.\tLe chien."] * 3
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("\n".join(rows) + "\n")
    builder.main(["--corpus", str(corpus), "--model-dir", str(model_dir), "--top-k", "5", "--frequent", "2"])
    tok = Tokenizer(model_dir / "sentencepiece.model")
    vocab = json.loads((model_dir / "config.json").read_text())["vocab_size"]
    sl = Shortlist.load(model_dir, vocab_size=vocab)
    assert sl.top_k == 5 and sl.frequent == 2
    cat, chat = tok.encode(["cat"])[0][0], tok.encode(["chat"])[0][0]
    assert chat in sl.candidates([cat]).tolist() and cat in sl.candidates([chat]).tolist()
    assert (model_dir / FILENAME).stat().st_size < 2_000_000
    (tmp_path / "bad.tsv").write_text("only one column\n")
    with pytest.raises(ValueError, match="expected origin"):
        builder.main(["--corpus", str(tmp_path / "bad.tsv"), "--model-dir", str(model_dir)])


def test_the_ctranslate2_vocabulary_map_lists_the_same_candidates(tmp_path) -> None:
    """``write_vmap``: the always-on tokens on the line with an empty source, then per source token
    itself and its list -- the union CTranslate2 forms for one sentence is its candidates here."""
    sl = build_from_pairs(HAND_SRC, HAND_TGT, 12, top_k=2, frequent=1)
    pieces = [f"p{i}" for i in range(12)]
    lines = builder.write_vmap(sl, pieces, tmp_path / "vmap.txt").read_text().splitlines()
    rules = {}
    for line in lines:
        key, _, targets = line.partition("\t")
        rules[key] = [pieces.index(p) for p in targets.split()]
    assert set(rules) == {""} | set(pieces)
    for src in ([5], [4, 6], [11]):
        union = set(rules[""]).union(*(rules[pieces[s]] for s in src))
        assert union == set(sl.candidates(src).tolist())
    with pytest.raises(ShortlistError):
        builder.write_vmap(sl, pieces[:5], tmp_path / "bad.txt")
