"""rendition.model.tokenizer: a short list is encoded text by text on the calling thread; the result must be
exactly sentencepiece's own list encoding (its thread pool), ids and pieces."""

from __future__ import annotations

import sentencepiece as spm

from rendition.model.tokenizer import Tokenizer
from rendition.model.translation.translator import DEFAULT_TRANSLATOR as TRANSLATOR_DIR

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
    from rendition.model.tokenizer import train_tokenizer
    from rendition.model.training.data import SPLITS_DIR, read_tsv

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


def test_case_folding_tokenizer_gives_every_casing_the_same_pieces(tmp_path) -> None:
    """``train_tokenizer(case_fold=True)``: the rule travels in the model file, so any loader of it
    gives "Open File", "OPEN FILE" and "open file" the same ids (the uncased teacher gives them one
    vector); the default tokenizer keeps case apart; byte fallback still covers every script."""
    from rendition.model.tokenizer import train_tokenizer
    from rendition.model.training.data import SPLITS_DIR, read_tsv

    texts = [p.src for p in read_tsv(SPLITS_DIR / "valid.en-fr.tsv")[:1500]]
    folded = train_tokenizer(texts, tmp_path / "folded", 1200, ("en", "fr"), byte_fallback=True, multiword=True, case_fold=True)
    cased = train_tokenizer(texts, tmp_path / "cased", 1200, ("en", "fr"), byte_fallback=True)
    variants = ["Open the File Manager", "OPEN THE FILE MANAGER", "open the file manager", "oPeN tHe FiLe MaNaGeR"]
    reloaded = Tokenizer(tmp_path / "folded.model")  # a fresh load: the rule is in the file
    assert len({tuple(x) for x in reloaded.encode(variants)}) == 1
    assert len({tuple(x) for x in cased.encode(variants)}) == 4
    assert all(p == p.lower() for p in folded.pieces() if not p.startswith("<"))
    assert folded.decode(folded.encode(["Déjà vu, 漢字 🙂"])) == ["déjà vu, 漢字 🙂"]
    assert folded.encode(["Ça"]) != folded.encode(["Ta"]) and folded.encode(["Ça"]) == folded.encode(["ça"])


def test_spans_cover_the_text_as_written(tmp_path) -> None:
    """``encode_spans``: the ids are ``encode``'s; the spans, in characters, tile the text from the
    first piece to the last without overlap or gap (only leading whitespace is outside), each span
    is the piece's own text up to case and whitespace, and a character split into byte pieces is
    spanned once, by its last byte piece -- for a cased and a case-folding multi-word tokenizer."""
    from rendition.model.tokenizer import train_tokenizer
    from rendition.model.training.data import SPLITS_DIR, read_tsv

    texts = [p.src for p in read_tsv(SPLITS_DIR / "valid.en-fr.tsv")[:1500]]
    for tok in (
        Tokenizer(TRANSLATOR_DIR / "sentencepiece.model"),
        train_tokenizer(texts, tmp_path / "folded", 1200, ("en", "fr"), byte_fallback=True, multiword=True, case_fold=True),
    ):
        for text in [*TEXTS, "Hi, how  are you?", "OPEN THE FILE  MANAGER now"]:
            spans = tok.encode_spans(text)
            assert [i for i, _, _ in spans] == tok.encode([text])[0]
            if not spans:
                assert not text.strip()
                continue
            assert spans[0][1] == len(text) - len(text.lstrip()) and spans[-1][2] <= len(text)
            assert text[spans[-1][2] :].strip() == ""
            for (_, _, stop), (_, start, _) in zip(spans, spans[1:]):
                assert start == stop  # contiguous
            for i, start, stop in spans:
                piece = tok.sp.id_to_piece(i)
                if piece.startswith("<0x"):
                    assert stop - start in (0, 1)  # a byte piece: empty, or the whole character it ends
                    continue
                want = piece.replace("\u2581", " ").split()
                assert text[start:stop].lower().split() == want or text[start:stop].strip() == piece.strip("\u2581"), (piece, text[start:stop])
            run = 0  # byte pieces since the last character they completed
            for i, start, stop in spans:
                if tok.sp.id_to_piece(i).startswith("<0x"):
                    run += 1
                    if stop > start:
                        assert len(text[start:stop].encode("utf-8")) == run
                        run = 0
            assert run == 0
