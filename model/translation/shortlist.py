"""A vocabulary shortlist for the decoder's output projection (CTranslate2's ``use_vmap``, Marian's
lexical shortlist): each decoding step computes logits only over the tokens a batch's sentences can
plausibly produce, instead of over the whole vocabulary.

A shortlist is built once from a parallel corpus (``rendition build-shortlist``) and stored in the
model directory as ``shortlist.safetensors`` (no pickle):

* ``offsets`` (V + 1,) and ``targets``: per source token s, ``targets[offsets[s]:offsets[s + 1]]``
  are its best target tokens, best first, by a sentence-level co-occurrence score: the Dice
  coefficient 2 c(s, t) / (c(s) + c(t)) by default, or p(t | s) = c(s, t) / c(s), where c(s)
  counts the sentence pairs whose source side holds s, c(t) those whose target side holds t and
  c(s, t) those holding both (each token counted once per sentence; ``cooccurrence_scores``).
  The frequent tokens below are left out of these lists (they are always candidates anyway), so
  the top K are the K best of the others.  Both directions of the shared vocabulary go into one
  table: an en-fr pair counts English source tokens against French target tokens and the reverse.
* ``frequent``: target tokens, most frequent first (every token seen on a target side); the first
  ``frequent`` of them (the metadata's count) are candidates of every sentence, and the rest top
  a batch's list up to a multiple of ``ALIGN`` tokens.

At run time a sentence's candidates are the union of its source tokens' lists, the frequent
tokens, the special tokens an output can hold (unknown, EOS) and the source tokens themselves (so that
numbers, names, URLs and identifiers can be copied).  A search's candidates are the union over its
live sentences, sorted by id and topped up with the next most frequent tokens to a multiple of
``ALIGN`` (the chunked top-k of ``rendition.model.translation.search`` then applies); the search
computes logits over those ids only and normalises over them (``rendition.model.translation.search``).
At load time ``top_k`` can be lowered and ``frequent`` raised (the lists are stored best first, and
a list's tokens that became frequent ones are skipped before its first ``top_k`` are taken).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from rendition.model.tokenizer import EOS_ID, UNK_ID, Tokenizer

if TYPE_CHECKING:
    from scipy import sparse

FILENAME = "shortlist.safetensors"
ALIGN = 64  # a search's candidate list is topped up to a multiple of this many tokens
SPECIALS = (UNK_ID, EOS_ID)  # the special tokens an output can hold (never padding, BOS or a language tag)


class ShortlistError(ValueError):
    """A shortlist file that cannot serve this model (missing, malformed, another vocabulary)."""


@dataclass(eq=False)
class Shortlist:
    """Per source token its candidate target tokens (``offsets``/``targets``, best first), the
    target tokens by frequency (``ranking``), and how many of each list are used."""

    offsets: np.ndarray  # (V + 1,) int64
    targets: np.ndarray  # (offsets[-1],) int64
    ranking: np.ndarray  # (<= V,) int64, most frequent first
    vocab_size: int
    top_k: int  # the first top_k of each list are used
    frequent: int  # the first `frequent` of ranking are always candidates
    score: str = "dice"  # how the lists were ranked (``cooccurrence_scores``)
    always: np.ndarray | None = None  # more tokens that are candidates of every sentence (the byte pieces)

    def __post_init__(self) -> None:
        V = self.vocab_size
        if self.offsets.shape != (V + 1,) or self.offsets[0] != 0 or self.offsets[-1] != len(self.targets):
            raise ShortlistError(f"shortlist offsets must be ({V + 1},) from 0 to len(targets)")
        if np.any(np.diff(self.offsets) < 0):
            raise ShortlistError("shortlist offsets must not decrease")
        for name in ("targets", "ranking"):
            a = getattr(self, name)
            if len(a) and (a.min() < 0 or a.max() >= V):
                raise ShortlistError(f"shortlist {name} must be token ids in [0, {V})")
        if self.top_k < 0 or self.frequent < 0:
            raise ShortlistError("top_k and frequent must be >= 0")
        # the always-on candidates, and the rest of the ranking then the unseen ids (for topping up)
        base = np.zeros(V, dtype=bool)
        base[list(s for s in SPECIALS if s < V)] = True
        base[self.ranking[: self.frequent]] = True
        if self.always is not None:
            if len(self.always) and (self.always.min() < 0 or self.always.max() >= V):
                raise ShortlistError(f"shortlist always must be token ids in [0, {V})")
            base[self.always] = True
        self._base = base
        seen = np.zeros(V, dtype=bool)
        seen[self.ranking] = True
        self._fill = np.concatenate([self.ranking, np.flatnonzero(~seen)])
        # the used part of each list: its first top_k tokens that are not always candidates anyway
        keep = ~base[self.targets]
        row = np.repeat(np.arange(V), np.diff(self.offsets))
        before = np.concatenate([[0], np.cumsum(keep)])  # kept entries before each position
        rank = before[1:] - before[self.offsets[:-1]][row]  # 1-based rank of a kept entry in its row
        used = keep & (rank <= self.top_k)
        self._targets = self.targets[used]
        self._offsets = np.concatenate([[0], np.cumsum(np.bincount(row[used], minlength=V))])

    def list_of(self, token: int) -> np.ndarray:
        """The target tokens a source token adds (best first), beyond the always-on ones."""
        return self._targets[self._offsets[token] : self._offsets[token + 1]]

    # -- run time -----------------------------------------------------------------------------------
    def candidates(self, source: Sequence[int]) -> np.ndarray:
        """A sentence's candidate target tokens (sorted ids) for its source token ids."""
        src = np.unique(np.asarray(source, dtype=np.int64))
        if len(src) and (src[0] < 0 or src[-1] >= self.vocab_size):
            raise ShortlistError(f"source token ids must be in [0, {self.vocab_size})")
        mask = self._base.copy()
        mask[src] = True
        for s in src.tolist():
            mask[self._targets[self._offsets[s] : self._offsets[s + 1]]] = True
        return np.flatnonzero(mask)

    def union(self, lists: Iterable[np.ndarray], align: int = ALIGN) -> np.ndarray:
        """Sorted ids: the union of sentences' candidates, topped up with the most frequent other
        tokens to a multiple of ``align`` (or to the whole vocabulary)."""
        mask = self._base.copy()
        for ids in lists:
            mask[ids] = True
        n = int(mask.sum())
        need = min(-(-n // align) * align, self.vocab_size) - n
        if need:
            extra = self._fill[~mask[self._fill]][:need]
            mask[extra] = True
        return np.flatnonzero(mask)

    # -- storage ----------------------------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Stored as int16 ids where the vocabulary fits (int32 otherwise), the whole lists kept."""
        from safetensors.torch import save_file

        dtype = torch.int16 if self.vocab_size <= 32767 else torch.int32
        tensors = {
            "offsets": torch.from_numpy(self.offsets.astype(np.int32)),
            "targets": torch.from_numpy(self.targets).to(dtype),
            "frequent": torch.from_numpy(self.ranking).to(dtype),
            "always": torch.from_numpy(np.zeros(0, np.int64) if self.always is None else self.always).to(dtype),
        }
        meta = {"vocab_size": str(self.vocab_size), "top_k": str(self.top_k), "frequent": str(self.frequent),
                "score": self.score}  # fmt: skip
        save_file(tensors, str(path), metadata=meta)

    @classmethod
    def load(cls, path: str | Path, vocab_size: int | None = None, top_k: int | None = None, frequent: int | None = None) -> Shortlist:
        """The shortlist at ``path`` (a file, or a model directory holding ``shortlist.safetensors``);
        ``top_k`` at most and ``frequent`` at least what it was built with (None: as built); ``vocab_size``:
        the model's, checked."""
        from safetensors import SafetensorError, safe_open

        path = Path(path)
        if path.is_dir():
            path = path / FILENAME
        if not path.is_file():
            raise ShortlistError(f"no shortlist at {path} (build one with `rendition build-shortlist`)")
        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                arrays = {k: f.get_tensor(k).to(torch.int64).numpy() for k in ("offsets", "targets", "frequent")}
                always = f.get_tensor("always").to(torch.int64).numpy() if "always" in f.keys() else None
            V, built_k, built_n = int(meta["vocab_size"]), int(meta["top_k"]), int(meta["frequent"])
        except (SafetensorError, KeyError, ValueError, OSError) as e:
            raise ShortlistError(f"{path} is not a shortlist file: {e}") from e
        if vocab_size is not None and V != vocab_size:
            raise ShortlistError(f"the shortlist at {path} is for a vocabulary of {V}, the model has {vocab_size}")
        k = built_k if top_k is None else top_k
        n = built_n if frequent is None else frequent
        if k > built_k or n < built_n:  # (the lists leave out the `frequent` tokens it was built with)
            raise ShortlistError(f"{path} was built with top_k {built_k} and frequent {built_n}: top_k can be lowered "
                                 f"and frequent raised, not top_k {k} and frequent {n}")  # fmt: skip
        return cls(arrays["offsets"], arrays["targets"], arrays["frequent"], V, k, n, meta.get("score", "?"), always)


def resolve_shortlist(spec: bool | str | Path | Shortlist | None, model_dir: Path, vocab_size: int) -> Shortlist | None:
    """What ``Translator.from_pretrained(shortlist=...)`` takes: False/None (off), True (the model
    directory's ``shortlist.safetensors``), a path, or a ``Shortlist``."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, Shortlist):
        if spec.vocab_size != vocab_size:
            raise ShortlistError(f"the shortlist is for a vocabulary of {spec.vocab_size}, the model has {vocab_size}")
        return spec
    return Shortlist.load(model_dir if spec is True else Path(spec), vocab_size)


def write_vmap(shortlist: Shortlist, pieces: Sequence[str], path: str | Path) -> Path:
    """The shortlist as CTranslate2's vocabulary map (``use_vmap``; a text file of lines
    ``source-piece<TAB>target pieces``, the line with an empty source listing the tokens always
    included): the always-on tokens, then per source token its list and itself (copies).
    CTranslate2 takes the union over a batch's sentences, where a search here keeps each
    sentence to its own candidates."""
    if len(pieces) != shortlist.vocab_size:
        raise ShortlistError(f"the shortlist is for a vocabulary of {shortlist.vocab_size}, not {len(pieces)} pieces")
    lines = ["\t" + " ".join(pieces[int(i)] for i in np.flatnonzero(shortlist._base))]
    for s in range(shortlist.vocab_size):
        lines.append(pieces[s] + "\t" + " ".join(pieces[t] for t in [s, *shortlist.list_of(s).tolist()]))
    path = Path(path)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# -- building ---------------------------------------------------------------------------------------
def _incidence(docs: Sequence[Sequence[int]], vocab_size: int) -> sparse.csr_matrix:
    """A binary (documents, V) CSR matrix: which tokens each document holds (once each)."""
    from scipy import sparse

    rows = [np.unique(np.asarray(d, dtype=np.int64)) for d in docs]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    data = np.ones(len(indices), dtype=np.float32)
    return sparse.csr_matrix((data, indices, indptr), shape=(len(rows), vocab_size))


SCORES = ("dice", "p")


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


def read_corpus(path: Path, tokenizer: Tokenizer, limit: int | None = None, batch: int = 65536) -> tuple[list, list]:
    """Sentence pairs of a TSV corpus (``origin<TAB>english<TAB>french``) in both directions: the
    English-to-French pairs, then the French-to-English ones, as token ids."""
    en: list[str] = []
    fr: list[str] = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if limit is not None and i >= limit:
                break
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 3:
                raise ValueError(f"{path}:{i + 1}: expected origin<TAB>english<TAB>french")
            en.append(cols[1])
            fr.append(cols[2])
    en_ids = [ids for lo in range(0, len(en), batch) for ids in tokenizer.encode(en[lo : lo + batch])]
    fr_ids = [ids for lo in range(0, len(fr), batch) for ids in tokenizer.encode(fr[lo : lo + batch])]
    return en_ids + fr_ids, fr_ids + en_ids


def main(argv: Sequence[str] | None = None) -> None:
    """``rendition build-shortlist --corpus TSV --model-dir DIR [--top-k K] [--frequent N]``."""
    from rendition.model.tokenizer import Tokenizer

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
