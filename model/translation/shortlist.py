"""A vocabulary shortlist for the decoder's output projection (CTranslate2's ``use_vmap``, Marian's
lexical shortlist): each decoding step computes logits only over the tokens a batch's sentences can
plausibly produce, instead of over the whole vocabulary.

A shortlist is built once from a parallel corpus (``rendition build-shortlist``,
``rendition.model.export.shortlist``) and stored in the model directory as ``shortlist.safetensors``
(no pickle):

* ``offsets`` (V + 1,) and ``targets``: per source token s, ``targets[offsets[s]:offsets[s + 1]]``
  are its best target tokens, best first (by the co-occurrence score the builder names in the
  metadata).  The frequent tokens below are left out of these lists (they are always candidates
  anyway), so the top K are the K best of the others.  Both directions of the shared vocabulary
  go into one table.
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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from rendition.model.tokenizer import EOS_ID, UNK_ID

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
    score: str = "dice"  # how the lists were ranked (``rendition.model.export.shortlist.cooccurrence_scores``)
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

    def always_on(self) -> np.ndarray:
        """The tokens that are candidates of every sentence (sorted ids)."""
        return np.flatnonzero(self._base)

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
