"""SentencePiece tokenizer shared by the translator and the sentence encoder.

Special ids are fixed: ``<pad>``=0, ``<unk>``=1, ``<s>``=2, ``</s>``=3, then one ``<2xx>``
target-language tag per supported language.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import sentencepiece as spm

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def lang_tag(lang: str) -> str:
    return f"<2{lang}>"


class Tokenizer:
    def __init__(self, model_file: str | Path):
        self.path = Path(model_file)
        self.sp = spm.SentencePieceProcessor(model_file=str(model_file))
        assert self.sp.pad_id() == PAD_ID and self.sp.eos_id() == EOS_ID, "unexpected special ids"

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def pieces(self) -> list[str]:
        return [self.sp.id_to_piece(i) for i in range(self.vocab_size)]

    def lang_id(self, lang: str) -> int:
        i = self.sp.piece_to_id(lang_tag(lang))
        if i == UNK_ID:
            raise KeyError(f"language {lang!r} has no tag in this tokenizer")
        return i

    def languages(self) -> list[str]:
        return [p[2:-1] for p in self.pieces() if p.startswith("<2") and p.endswith(">")]

    # Lists shorter than this are encoded one text at a time on the calling thread.  sentencepiece
    # encodes a list on threads it starts per call -- even with num_threads=1 (37 us for one
    # sentence, against 7 us for the same sentence passed alone) -- and under load those threads
    # wait for cores the model's workers hold (a quarter of the event loop's samples in the
    # service, py-spy, 64 requests in flight).
    THREADED_FROM = 256

    def _encode(self, texts: Sequence[str], out_type: type) -> list[list]:
        texts = list(texts)
        if len(texts) < self.THREADED_FROM:
            return [self.sp.encode(t, out_type=out_type) for t in texts]
        return self.sp.encode(texts, out_type=out_type, num_threads=-1)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        return self._encode(texts, int)

    def encode_pieces(self, texts: Sequence[str]) -> list[list[str]]:
        """The pieces of ``encode``'s ids, as strings."""
        return self._encode(texts, str)

    def encode_spans(self, text: str) -> list[tuple[int, int, int]]:
        """``(id, start, stop)`` per piece of ``encode([text])[0]``: the piece's span in ``text`` in
        characters, as SentencePiece itself aligns it (its byte offsets into the text as given,
        before normalisation).  A piece that starts a word spans the whitespace before it; the first
        bytes of a character split into byte pieces have empty spans and its last one the character;
        spans hold wherever the normaliser changes the text (case folding, NFKC, runs of spaces)."""
        from sentencepiece import sentencepiece_pb2

        proto = sentencepiece_pb2.SentencePieceText.FromString(self.sp.encode(text, out_type="serialized_proto"))
        chars = [0] * (len(text.encode("utf-8")) + 1)  # byte offset -> character offset
        b = 0
        for i, ch in enumerate(text):
            n = len(ch.encode("utf-8"))
            chars[b : b + n] = [i] * n
            b += n
        chars[b] = len(text)
        return [(p.id, chars[p.begin], chars[p.end]) for p in proto.pieces]

    def decode(self, ids: Sequence[Sequence[int]]) -> list[str]:
        return [self.sp.decode([i for i in seq if i > EOS_ID]) for seq in ids]

    def decode_pieces(self, pieces: Sequence[Sequence[str]]) -> list[str]:
        return [self.sp.decode_pieces(list(p)) for p in pieces]


def train_tokenizer(
    texts: Iterable[str],
    prefix: Path,
    vocab_size: int,
    langs: Sequence[str],
    byte_fallback: bool = False,
    input_sentences: int = 400_000,
    multiword: bool = False,
    case_fold: bool = False,
) -> Tokenizer:
    """A unigram SentencePiece model; with ``byte_fallback``, characters outside the vocabulary
    become byte pieces (``<0xE2>``...) instead of ``<unk>``, so text in any script gets distinct ids.

    With ``multiword``, pieces may span words (``\u2581of\u2581the``, ``\u2581how\u2581are\u2581you``:
    SentencePiece's ``split_by_whitespace=False``, up to 24 characters), and of those only the
    word-aligned ones are kept (``word_aligned``), so the model has ``vocab_size`` minus the dropped
    pieces.

    With ``case_fold``, the model's normaliser folds case (SentencePiece's ``nmt_nfkc_cf`` rule:
    NFKC plus Unicode case folding), so "Open File", "open file" and "OPEN FILE" get the same
    pieces.  The rule lives in the model file: whoever loads it tokenizes that way."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_prefix=str(prefix),
        model_type="unigram",
        vocab_size=vocab_size,
        character_coverage=0.9999,
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        user_defined_symbols=[lang_tag(x) for x in langs],
        byte_fallback=byte_fallback,
        input_sentence_size=input_sentences,
        shuffle_input_sentence=True,
        num_threads=2,
        minloglevel=2,
        normalization_rule_name="nmt_nfkc_cf" if case_fold else "nmt_nfkc",
        **cast("dict[str, Any]", {"split_by_whitespace": False, "max_sentencepiece_length": 24} if multiword else {}),
    )
    if multiword:
        word_aligned(f"{prefix}.model")
    return Tokenizer(f"{prefix}.model")


def word_aligned(model_file: str | Path) -> int:
    """Drop, in place, the pieces that cross a word boundary without starting at one (``s\u2581and``
    from "files and": a suffix glued to the next word); multi-word pieces that start a word
    (``\u2581files\u2581and``) and pieces within a word stay.  Returns how many were dropped.  The
    unigram model's segmentation needs no other change: it picks the best split among the pieces
    that are left."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(Path(model_file).read_bytes())
    keep = [p for p in proto.pieces if "\u2581" not in p.piece[1:] or p.piece.startswith("\u2581")]
    dropped = len(proto.pieces) - len(keep)
    del proto.pieces[:]
    proto.pieces.extend(keep)
    proto.trainer_spec.vocab_size = len(keep)
    Path(model_file).write_bytes(proto.SerializeToString())
    return dropped


def with_byte_fallback(model_file: str | Path, dst: str | Path) -> Tokenizer:
    """A copy of a SentencePiece model with the 256 byte pieces ``<0x00>``..``<0xFF>`` appended and
    byte fallback switched on: the ids of existing pieces are unchanged (a model trained on them
    keeps its embeddings), and characters outside the vocabulary become byte pieces, not ``<unk>``."""
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(Path(model_file).read_bytes())
    have = {p.piece for p in proto.pieces}
    for b in range(256):
        piece = f"<0x{b:02X}>"
        if piece not in have:
            new = proto.pieces.add()
            new.piece, new.score, new.type = piece, 0.0, pb.ModelProto.SentencePiece.BYTE
    proto.trainer_spec.byte_fallback = True
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    Path(dst).write_bytes(proto.SerializeToString())
    return Tokenizer(dst)
