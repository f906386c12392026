"""Build a translator's vocabulary shortlist (``rendition build-shortlist``) from a parallel corpus;
the file it writes and how a search uses it: ``rendition.model.translation.shortlist``.

Per source token s its best target tokens t, best first, by a sentence-level co-occurrence score:
the Dice coefficient 2 c(s, t) / (c(s) + c(t)) by default, or p(t | s) = c(s, t) / c(s), where c(s)
counts the sentence pairs whose source side holds s, c(t) those whose target side holds t and
c(s, t) those holding both (each token counted once per sentence; ``cooccurrence_scores``).  The
frequent target tokens are left out of the lists (they are always candidates anyway).  Both
directions of the shared vocabulary go into one table: an en-fr pair counts English source tokens
against French target tokens and the reverse.  ``write_vmap`` writes a shortlist as CTranslate2's
vocabulary map.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rendition.model.tokenizer import Tokenizer
from rendition.model.training.corpus.rows import read_rows
from rendition.model.translation.shortlist import FILENAME, SPECIALS, Shortlist, ShortlistError

if TYPE_CHECKING:
    from scipy import sparse

SCORES = ("dice", "p")


def _incidence(docs: Sequence[Sequence[int]], vocab_size: int) -> sparse.csr_matrix:
    """A binary (documents, V) CSR matrix: which tokens each document holds (once each)."""
    from scipy import sparse

    rows = [np.unique(np.asarray(d, dtype=np.int64)) for d in docs]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    data = np.ones(len(indices), dtype=np.float32)
    return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), vocab_size))



def cooccurrence_scores(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], vocab_size: int, score: str = "dice") -> sparse.csr_matrix:
    """Translation scores of target tokens t for source tokens s from sentence pairs (source ids,
    target ids), with c(s), c(t) the pairs whose source (target) side holds the token and c(s, t)
    those holding both: "dice" 2 c(s, t) / (c(s) + c(t)), or "p" p(t | s) = c(s, t) / c(s).  A
    (V, V) scipy CSR matrix (row s, column t; rows of tokens never on a source side are empty).
    p(t | s) of a frequent source token is about p(t) for most t, so its best targets are merely
    frequent ones; Dice rewards the targets that come with s more than with other tokens."""
    if len(sources) != len(targets):
        raise ValueError("sources and targets must be sentence pairs")
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, not {score!r}")
    A, B = _incidence(sources, vocab_size), _incidence(targets, vocab_size)
    C = (A.T.tocsr() @ B).tocsr()  # c(s, t)
    C.sort_indices()
    c_s = np.asarray(A.sum(0)).ravel().astype(np.float64)  # c(s)
    if score == "p":
        inv = np.divide(1.0, c_s, out=np.zeros_like(c_s), where=c_s > 0)
        C.data = C.data * np.repeat(inv, np.diff(C.indptr))
    else:
        c_t = np.asarray(B.sum(0)).ravel().astype(np.float64)
        rows = np.repeat(np.arange(vocab_size), np.diff(C.indptr))
        C.data = 2.0 * C.data / (c_s[rows] + c_t[C.indices])
    return C


def build_from_pairs(
    sources: Sequence[Sequence[int]],
    targets: Sequence[Sequence[int]],
    vocab_size: int,
    top_k: int = 50,
    frequent: int = 500,
    score: str = "dice",
    always: Sequence[int] = (),
    block: int = 1024,
) -> Shortlist:
    """A shortlist from sentence pairs of token ids (both directions already in the lists): per
    source token the ``top_k`` best targets by ``score`` (``cooccurrence_scores``) among those not
    in the ``frequent`` most frequent target tokens (ties: the lower id first), and the target
    ranking by frequency; ``always``: tokens to make candidates of every sentence (left out of the
    lists too)."""
    counts = np.bincount(np.concatenate([np.asarray(t, dtype=np.int64) for t in targets] or [np.zeros(0, np.int64)]),
                         minlength=vocab_size)  # fmt: skip
    seen = np.flatnonzero(counts)
    ranking = seen[np.lexsort((seen, -counts[seen]))]  # most frequent first, then by id
    extra = np.asarray(always, dtype=np.int64)
    on = np.zeros(vocab_size, dtype=bool)  # candidates of every sentence: not in the lists
    on[ranking[:frequent]] = True
    on[[s for s in SPECIALS if s < vocab_size]] = True
    on[extra] = True
    P = cooccurrence_scores(sources, targets, vocab_size, score)
    lists: list[np.ndarray] = []
    for lo in range(0, vocab_size, block):  # dense blocks of rows: the top-k by argsort
        dense = P[lo : lo + block].toarray()
        dense[:, on] = 0.0
        order = np.argsort(-dense, axis=1, kind="stable")[:, :top_k]
        for r in range(dense.shape[0]):
            row = order[r]
            lists.append(row[dense[r, row] > 0])
    offsets = np.zeros(vocab_size + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    flat = np.concatenate(lists) if lists else np.zeros(0, np.int64)
    return Shortlist(offsets, flat.astype(np.int64), ranking.astype(np.int64), vocab_size, top_k, frequent, score, extra)


def read_corpus(path: Path, tokenizer: Tokenizer, limit: int | None = None, batch: int = 65536) -> tuple[list[list[int]], list[list[int]]]:
    """Sentence pairs of a corpus file (``rendition.model.training.corpus.rows``) in both directions:
    the English-to-French pairs, then the French-to-English ones, as token ids."""
    rows = list(read_rows(path, limit))
    en_ids = _encode(tokenizer, [en for _, en, _ in rows], batch)
    fr_ids = _encode(tokenizer, [fr for _, _, fr in rows], batch)
    return en_ids + fr_ids, fr_ids + en_ids


def _encode(tokenizer: Tokenizer, texts: Sequence[str], batch: int) -> list[list[int]]:
    return [ids for lo in range(0, len(texts), batch) for ids in tokenizer.encode(texts[lo : lo + batch])]


def write_vmap(shortlist: Shortlist, pieces: Sequence[str], path: str | Path) -> Path:
    """The shortlist as CTranslate2's vocabulary map (``use_vmap``; a text file of lines
    ``source-piece<TAB>target pieces``, the line with an empty source listing the tokens always
    included): the always-on tokens, then per source token its list and itself (copies).
    CTranslate2 takes the union over a batch's sentences, where a search here keeps each
    sentence to its own candidates."""
    if len(pieces) != shortlist.vocab_size:
        raise ShortlistError(f"the shortlist is for a vocabulary of {shortlist.vocab_size}, not {len(pieces)} pieces")
    lines = ["\t" + " ".join(pieces[int(i)] for i in shortlist.always_on())]
    for s in range(shortlist.vocab_size):
        lines.append(pieces[s] + "\t" + " ".join(pieces[t] for t in [s, *shortlist.list_of(s).tolist()]))
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> None:
    """``rendition build-shortlist --corpus TSV --model-dir DIR [--top-k K] [--frequent N]``."""
    ap = argparse.ArgumentParser(prog="rendition build-shortlist", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--corpus", type=Path, required=True, help="TSV rows origin<TAB>english<TAB>french")
    ap.add_argument("--model-dir", type=Path, required=True, help="its sentencepiece.model and config.json; the file goes here (model/pretrained/translator for the shipped one)")
    ap.add_argument("--top-k", type=int, default=50, help="target tokens kept per source token (besides the frequent ones)")
    ap.add_argument("--frequent", type=int, default=500, help="most frequent target tokens, candidates of every sentence")
    ap.add_argument("--score", default="dice", choices=SCORES, help="how a source token's targets are ranked: Dice coefficient or p(t|s)")
    ap.add_argument("--output", type=Path, default=None, help=f"default: MODEL_DIR/{FILENAME}")
    ap.add_argument("--limit", type=int, default=None, help="only the first N rows of the corpus")
    a = ap.parse_args(argv)
    if a.top_k < 1 or a.frequent < 0:
        ap.error("--top-k must be >= 1 and --frequent >= 0")
    if not a.corpus.is_file():
        ap.error(f"corpus not found: {a.corpus}")
    tok = Tokenizer(a.model_dir / "sentencepiece.model")
    vocab = json.loads((a.model_dir / "config.json").read_text())["vocab_size"]
    sources, targets = read_corpus(a.corpus, tok, a.limit)
    pieces = tok.pieces()
    byte_pieces = [i for i, p in enumerate(pieces) if len(p) == 6 and p.startswith("<0x") and p.endswith(">")]
    sl = build_from_pairs(sources, targets, vocab, a.top_k, a.frequent, a.score, byte_pieces)
    out = a.output or a.model_dir / FILENAME
    sl.save(out)
    print(f"{out}: {len(sources) // 2} sentence pairs x 2 directions, {a.score}, top_k {a.top_k}, frequent {a.frequent}, "
          f"{len(sl.targets)} entries, {out.stat().st_size / 1e6:.2f} MB")  # fmt: skip


if __name__ == "__main__":
    main()
