"""model.tokenizer: a short list is encoded text by text on the calling thread; the result must be
exactly sentencepiece's own list encoding (its thread pool), ids and pieces."""

from __future__ import annotations

import sentencepiece as spm

from model.tokenizer import Tokenizer
from model.translation.translator import DEFAULT_TRANSLATOR as TRANSLATOR_DIR

TEXTS = [
    "Hello, how are you?",
    "The weather is nice today.",
    "Ünïcödé, CJK 漢字, emoji 🙂 and Arabic مرحبا.",
    "",
    "   spaces   around   ",
    "Mise à jour du système : redémarrez l'ordinateur.",
]


def test_short_lists_equal_sentencepiece_list_encoding() -> None:
    tok = Tokenizer(TRANSLATOR_DIR / "sentencepiece.model")
    sp = spm.SentencePieceProcessor(model_file=str(TRANSLATOR_DIR / "sentencepiece.model"))
    texts = TEXTS * 5
    assert len(texts) < Tokenizer.THREADED_FROM
    assert tok.encode(texts) == sp.encode(texts, out_type=int, num_threads=2)
    assert tok.encode_pieces(texts) == sp.encode(texts, out_type=str, num_threads=2)
    long = TEXTS * (Tokenizer.THREADED_FROM // len(TEXTS) + 1)  # the threaded path
    assert tok.encode(long) == [tok.encode([t])[0] for t in long]


def test_multiword_tokenizer_keeps_only_word_aligned_pieces(tmp_path) -> None:
    """``train_tokenizer(multiword=True)``: pieces may span words, but every piece that holds a word
    boundary starts at one (``word_aligned``); text still decodes to itself, any script included,
    and sentences take fewer pieces."""
    from model.tokenizer import train_tokenizer
    from model.training.data import SPLITS_DIR, read_tsv

    texts = [p.src for p in read_tsv(SPLITS_DIR / "valid.en-fr.tsv")[:1500]]
    plain = train_tokenizer(texts, tmp_path / "plain", 1500, ("en", "fr"), byte_fallback=True)
    multi = train_tokenizer(texts, tmp_path / "multi", 1500, ("en", "fr"), byte_fallback=True, multiword=True)
    pieces = multi.pieces()
    spanning = [p for p in pieces if "\u2581" in p[1:]]
    assert len(spanning) > 50 and all(p.startswith("\u2581") for p in spanning)
    assert len(pieces) < 1500  # (the pieces that were not word-aligned are gone)
    for t in texts[:200] + TEXTS:
        assert multi.decode([multi.encode([t])[0]]) == plain.decode([plain.encode([t])[0]])
    n_multi = sum(map(len, multi.encode(texts)))
    n_plain = sum(map(len, plain.encode(texts)))
    assert n_multi < n_plain  # (at this toy size by 2%; 19% for general English at 128k pieces)
