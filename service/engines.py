"""Model adapters, one interface for every model (TEI / infinity style):

* ``pre(job)`` runs on the request (event loop): validate and tokenize one request's texts (one
  token-id list per sentence);
* ``key(job)`` the queue key (only sentences with equal keys share a search or a batch: for a
  translation its ``TranslationOptions``) and ``cost(ids, key)`` each sentence's cost for the
  queue's budget;
* ``post(job, ids, raw)`` turns one request's outputs into its typed result;
* ``core(key, batch)`` (the encoder only) runs in the batcher's worker thread on one batch that
  mixes several requests' sentences.  The translator's core is the step-level scheduler
  (``rendition.service.translation_engine``), not a call per batch.

A job is the request as the engine sees it (``TranslationJob``, ``EmbeddingJob``); results are
``TranslationOutput`` / ``EmbeddingOutput``.  ``rendition.service.inference`` runs a job through its
engine and the engine's queue; the routes call only that.  Engines are built from loaded models
(``load_translator`` / ``load_encoder``) or, in tests, from any ``Translator`` /
``SentenceEncoder`` instance, and never change the model object they are given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
import torch

from rendition.model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import Hypothesis, max_output_lengths, reached_limit
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translation, Translator
from rendition.model.weights import resolve_device
from rendition.service.metrics import Metrics

log = logging.getLogger("rendition.engines")


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto``: float16 on CUDA, float32 elsewhere."""
    if dtype == "auto":
        return torch.float16 if device.type == "cuda" else torch.float32
    return getattr(torch, dtype)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _is_oom(e: BaseException) -> bool:
    return isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e).lower()


T = TypeVar("T")
U = TypeVar("U")


def _split_on_oom(fn: Callable[[list[T]], list[U]], items: list[T]) -> list[U]:
    """Run fn(items, *args); on a CUDA out-of-memory error free the cache and retry in two halves."""
    try:
        return fn(items)
    except RuntimeError as e:
        if not _is_oom(e) or len(items) < 2:
            raise
        log.warning("out of memory on a batch; retrying in halves", extra={"batch_size": len(items)})
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        half = len(items) // 2
        return _split_on_oom(fn, items[:half]) + _split_on_oom(fn, items[half:])


J = TypeVar("J", contravariant=True)  # the job
K = TypeVar("K", bound=Hashable)  # the queue key
R = TypeVar("R")  # one sentence's raw result (from the queue)
Out = TypeVar("Out", covariant=True)  # the job's result


class Engine(Protocol[J, K, R, Out]):
    """What ``rendition.service.inference`` drives (see the module docstring)."""

    name: str
    task: str

    def pre(self, job: J) -> list[list[int]]: ...

    def key(self, job: J) -> K: ...

    def cost(self, ids: list[int], key: K) -> int: ...

    def post(self, job: J, ids: list[list[int]], raw: list[R]) -> Out: ...

    def info(self) -> dict: ...


# ------------------------------------------------------------------------------------------------
# translation
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TranslationJob:
    texts: Sequence[str]
    source: str
    target: str
    options: TranslationOptions = TranslationOptions()
    truncate: bool = False  # a translation ended by its length limit is kept (marked), else TranslationTooLong
    admitted: bool = False  # a later part of an accepted request (second decoding, pivot leg): never refused for a full queue


@dataclass(frozen=True)
class TranslationOutput:
    translations: list[Translation]
    source_tokens: int  # without the target tag and </s>
    target_tokens: int  # of the best hypotheses
    truncated: list[bool] = field(default_factory=list)  # per sentence: its best translation was ended by the limit


class UnsupportedLanguagePair(ValueError):
    """The translator does not translate this pair (the message lists those it does)."""


class TranslationTooLong(ValueError):
    """Sentence ``index``'s best translation reached its length limit (``limit`` tokens, from
    ``max_length`` or its ``source_tokens``) without ending, and the job does not allow a cut one.
    ``output``: the job's translations all the same (``truncated`` marks every cut sentence), for a
    caller that decodes the cut ones again."""

    def __init__(self, index: int, limit: int, source_tokens: int, output: TranslationOutput):
        super().__init__(f"sentence {index}: the translation reached its length limit ({limit} tokens) without ending")
        self.index, self.limit, self.source_tokens, self.output = index, limit, source_tokens, output


class TranslationEngine:
    task = "translation"

    def __init__(self, translator: Translator, name: str = "rendition-translator", metrics: Metrics | None = None):
        self.translator = translator
        self.name = name
        self.metrics = metrics

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.translator.languages)

    def check_pair(self, source: str, target: str) -> None:
        try:
            self.translator.check_pair(source, target)
        except ValueError as e:
            raise UnsupportedLanguagePair(str(e)) from None

    # pre: texts -> token ids (with the target tag and </s>), one per sentence
    def pre(self, job: TranslationJob) -> list[list[int]]:
        self.check_pair(job.source, job.target)
        return self.translator.preprocess(job.texts, job.target)

    def key(self, job: TranslationJob) -> TranslationOptions:
        return job.options

    @staticmethod
    def cost(ids: list[int], key: TranslationOptions) -> int:
        return len(ids) * key.rows  # search rows x source length (sampling: n draws)

    # post: one request's n-best hypotheses -> Translation objects; nothing cut silently
    def post(self, job: TranslationJob, ids: list[list[int]], raw: list[list[Hypothesis]]) -> TranslationOutput:
        """A best hypothesis that reached its length limit (``max_output_lengths``: ended by the
        limit, not by EOS) raises ``TranslationTooLong`` unless ``job.truncate``; without it, cut
        hypotheses further down the n-best are dropped."""
        limits = max_output_lengths([len(x) for x in ids], job.options)
        cut = [reached_limit(hyps[0], limit) for hyps, limit in zip(raw, limits)]
        if not job.truncate:  # (a cut sentence keeps its cut hypotheses, for the error's ``output``)
            raw = [hyps if c else [h for h in hyps if not reached_limit(h, limit)] for hyps, c, limit in zip(raw, cut, limits)]
        translations = self.translator.postprocess(raw)
        out = TranslationOutput(
            translations,
            source_tokens=sum(len(x) - 2 for x in ids),  # minus the target tag and </s>
            target_tokens=sum(len(t.tokens) for t in translations),
            truncated=cut,
        )
        if not job.truncate and any(cut):
            k = cut.index(True)
            raise TranslationTooLong(k, limits[k], len(ids[k]), out)
        return out

    def info(self) -> dict:
        model = self.translator.model
        p = next(model.parameters())
        cfg = model.cfg
        return {
            "id": self.name,
            "task": self.task,
            "architecture": "transformer-relative-position",
            "parameters": sum(x.numel() for x in model.parameters()),
            "languages": sorted(self.languages),
            "d_model": cfg.d_model,
            "layers": {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers},
            "max_positions": cfg.max_positions,
            "device": str(p.device),
            "dtype": dtype_name(p.dtype),
            "kv_cache_dtype": dtype_name(self.translator.kv_cache_dtype or p.dtype),
            "compute_type": self.translator.compute_type,
            "backend": self.translator.backend.name,
            "shortlist": self.translator.shortlist is not None,
        }


def load_translator(
    path: Path | None, device: str, dtype: str, kv_cache_dtype: str = "auto", compute_type: str = "auto", shortlist: bool = False
) -> Translator:
    """The translator on its device, dtype and compute type (its back end is chosen for them, once);
    ``shortlist``: with the model directory's vocabulary shortlist."""
    dev = resolve_device(device)
    return Translator.from_pretrained(
        path or DEFAULT_TRANSLATOR, device=str(dev), dtype=resolve_dtype(dtype, dev), kv_cache_dtype=kv_cache_dtype,
        compute_type=compute_type, shortlist=shortlist,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------
# sentence embeddings
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingJob:
    texts: Sequence[str] = ()
    dimensions: int | None = None  # keep the first ones (Matryoshka style); None: all
    normalize: bool = True
    truncate: bool = False  # a text over the encoder's max_length: cut (TEI's truncate), else InputTooLong
    ids: list[list[int]] | None = None  # token ids instead of texts, already within max_length (TEI's /embed)


@dataclass(frozen=True)
class EmbeddingOutput:
    vectors: np.ndarray  # (N, dimensions or dim) float32
    tokens: int


class EmbeddingEngine:
    task = "embedding"

    def __init__(self, encoder: SentenceEncoder, name: str = "rendition-disan", metrics: Metrics | None = None):
        self.encoder = encoder
        self.name = name
        self.metrics = metrics

    @property
    def dim(self) -> int:
        return self.encoder.dim

    # pre: texts -> token ids; over the encoder's max_length: InputTooLong, or cut with ``job.truncate``
    def pre(self, job: EmbeddingJob) -> list[list[int]]:
        if job.ids is not None:
            return job.ids
        return self.encoder.tokenize(job.texts, job.truncate)

    def key(self, job: EmbeddingJob) -> None:
        return None  # (every sentence can share a batch)

    @staticmethod
    def cost(ids: list[int], key: None = None) -> int:
        return max(1, len(ids))

    # core: one mixed batch -> raw (unnormalised) float32 vectors (SentenceEncoder.embed_ids)
    def core(self, key: None, batch: list[list[int]]) -> list[np.ndarray]:
        return list(_split_on_oom(self._forward, batch))

    def _forward(self, batch: list[list[int]]) -> list[np.ndarray]:
        return list(self.encoder.embed_ids(batch, batch_size=len(batch)))  # packed on CPU, else length buckets

    # post: truncate to `dimensions` (Matryoshka style), then L2-normalise
    def post(self, job: EmbeddingJob, ids: list[list[int]], raw: list[np.ndarray]) -> EmbeddingOutput:
        v = np.stack(raw).astype(np.float32)  # (N, dim)
        if job.dimensions is not None:
            v = v[:, : job.dimensions]
        if job.normalize:
            v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return EmbeddingOutput(v, tokens=sum(len(x) for x in ids))

    def info(self) -> dict:
        model = self.encoder.model
        p = next(model.parameters())
        cfg = model.cfg
        return {
            "id": self.name,
            "task": self.task,
            "architecture": "disan",
            "parameters": self.encoder.parameter_count,
            "languages": self.encoder.tokenizer.languages(),
            "embedding_size": self.dim,
            "max_length": self.encoder.max_length,
            "d_model": cfg.d_model,
            "device": str(p.device),
            "dtype": dtype_name(p.dtype),
            "compute_type": self.encoder.compute_type,
            "backend": self.encoder.backend,
        }


def load_encoder(path: Path | None, device: str, dtype: str, compute_type: str = "auto") -> SentenceEncoder:
    dev = resolve_device(device)
    return SentenceEncoder.from_pretrained(
        path or DEFAULT_ENCODER, device=str(dev), dtype=resolve_dtype(dtype, dev), compute_type=compute_type
    )
