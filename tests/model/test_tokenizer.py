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
