"""Model adapters for the batcher, each split ``pre -> core -> post`` (TEI / infinity style).

* ``pre`` runs on the request (event loop): validate and tokenize one request's texts, and give
  each sentence a token cost for the batcher.
* ``core`` runs in the batcher's worker thread on one batch that mixes several requests' sentences.
* ``post`` turns one request's core outputs back into API results.

Engines are built from loaded models (``load_translator`` / ``load_encoder``) or, in tests,
from any ``Translator`` / ``SentenceEncoder`` instance.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder
from model.translation.search import SearchOptions
from model.translation.translator import DEFAULT_TRANSLATOR, Translation, Translator
from model.weights import resolve_device
from service.metrics import Metrics

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


def _split_on_oom(fn, items: list, *args):
    """Run fn(items, *args); on a CUDA out-of-memory error free the cache and retry in two halves."""
    try:
        return fn(items, *args)
    except RuntimeError as e:
        if not _is_oom(e) or len(items) < 2:
            raise
        log.warning("out of memory on a batch; retrying in halves", extra={"batch_size": len(items)})
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        half = len(items) // 2
        return _split_on_oom(fn, items[:half], *args) + _split_on_oom(fn, items[half:], *args)


# ------------------------------------------------------------------------------------------------
# translation
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeOptions:
    """The batch key of a translation: only sentences with equal options share a beam search."""

    beam_size: int = 4
    num_hypotheses: int = 1
    length_penalty: float = 1.0
    max_length: int = 256
    min_length: int = 0


class TranslationEngine:
    task = "translation"

    def __init__(self, translator: Translator, name: str = "rendition-translator", metrics: Metrics | None = None):
        self.translator = translator
        self.translator.max_batch_tokens = 1 << 62  # the batcher applies the token budget, not Translator.core
        self.name = name
        self.metrics = metrics

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.translator.languages)

    def check_pair(self, source: str, target: str) -> None:
        self.translator.check_pair(source, target)  # ValueError listing the supported pairs

    # pre: texts -> token ids (with the target tag and </s>), one per sentence
    def pre(self, texts: Sequence[str], target: str) -> list[list[int]]:
        return self.translator.preprocess(texts, target)

    @staticmethod
    def cost(ids: list[int], opts: DecodeOptions) -> int:
        return len(ids) * opts.beam_size  # rows of the beam search x source length

    # core: one mixed batch -> n-best (tokens, score) per sentence
    def core(
        self, opts: DecodeOptions, batch: list[list[int]], should_stop: Callable[[], bool] | None = None
    ) -> list[list[tuple[list[int], float]]]:
        """``should_stop`` is polled once per decoding step (the batcher's "every request of this
        batch has gone"); the search then ends early and its partial results are discarded."""
        stats: dict[str, int] = {}
        search = SearchOptions(
            beam_size=opts.beam_size,
            num_hypotheses=opts.num_hypotheses,
            length_penalty=opts.length_penalty,
            max_length=opts.max_length,
            min_length=opts.min_length,
            stats=stats,
            should_stop=should_stop,
        )
        out = _split_on_oom(self.translator.core, batch, search)
        if self.metrics:
            self.metrics.decode_steps.inc(stats.get("decode_steps", 0))
            self.metrics.kv_cache_bytes.set(stats.get("kv_cache_bytes", 0))
            self.metrics.generated_tokens.inc(sum(len(hyps[0][0]) for hyps in out if hyps))
        return out

    # post: one request's core outputs -> Translation objects
    def post(self, results: list[list[tuple[list[int], float]]]) -> list[Translation]:
        return self.translator.postprocess(results)

    def info(self) -> dict:
        model = self.translator.model
        p = next(model.parameters())
        cfg = model.cfg
        return {
            "id": self.name,
            "task": self.task,
            "architecture": "transformer-relative-position",
            "parameters": sum(x.numel() for x in model.parameters()),
            "languages": list(self.languages),
            "d_model": cfg.d_model,
            "layers": {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers},
            "max_positions": cfg.max_positions,
            "device": str(p.device),
            "dtype": dtype_name(p.dtype),
            "kv_cache_dtype": dtype_name(self.translator.kv_cache_dtype or p.dtype),
            "backend": self.translator.backend.name,
        }

    def warmup(self) -> None:
        langs = self.languages
        opts = DecodeOptions(beam_size=2, max_length=4)
        self.core(opts, self.pre(["Hello world."], langs[1] if len(langs) > 1 else langs[0]))


def load_translator(path: Path | None, device: str, dtype: str, kv_cache_dtype: str = "auto") -> Translator:
    """The translator on its device and dtype (its back end is chosen for them, once)."""
    dev = resolve_device(device)
    return Translator.from_pretrained(
        path or DEFAULT_TRANSLATOR, device=str(dev), dtype=resolve_dtype(dtype, dev), kv_cache_dtype=kv_cache_dtype
    )


# ------------------------------------------------------------------------------------------------
# sentence embeddings
# ------------------------------------------------------------------------------------------------


class EmbeddingEngine:
    task = "embedding"

    def __init__(self, encoder: SentenceEncoder, name: str = "rendition-disan", metrics: Metrics | None = None):
        self.encoder = encoder
        self.name = name
        self.metrics = metrics

    @property
    def dim(self) -> int:
        return self.encoder.dim

    # pre: texts -> token ids (truncated to the encoder's max_length)
    def pre(self, texts: Sequence[str]) -> list[list[int]]:
        return self.encoder.tokenize(texts)

    @staticmethod
    def cost(ids: list[int]) -> int:
        return max(1, len(ids))

    # core: one mixed batch -> raw (unnormalised) float32 vectors, sorted into length buckets
    def core(self, _key: object, batch: list[list[int]]) -> list[np.ndarray]:
        return list(_split_on_oom(self._forward, batch))

    @torch.inference_mode()
    def _forward(self, batch: list[list[int]]) -> list[np.ndarray]:
        enc = self.encoder
        out = np.zeros((len(batch), enc.dim), dtype=np.float32)
        for idx in enc.buckets([len(s) for s in batch], batch_size=len(batch)):
            ids = enc.pad([batch[i] for i in idx], enc.device)  # (b, n)
            out[idx] = enc.model(ids).float().cpu().numpy()  # (b, dim)
        return list(out)

    # post: truncate to `dimensions` (Matryoshka style), then L2-normalise
    @staticmethod
    def post(vectors: list[np.ndarray], dimensions: int | None = None, normalize: bool = True) -> np.ndarray:
        v = np.stack(vectors).astype(np.float32)  # (N, dim)
        if dimensions is not None:
            v = v[:, :dimensions]
        if normalize:
            v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        return v

    def info(self) -> dict:
        model = self.encoder.model
        p = next(model.parameters())
        cfg = model.cfg
        return {
            "id": self.name,
            "task": self.task,
            "architecture": "disan",
            "parameters": sum(x.numel() for x in model.parameters()),
            "languages": self.encoder.tokenizer.languages(),
            "embedding_size": self.dim,
            "max_length": self.encoder.max_length,
            "d_model": cfg.d_model,
            "device": str(p.device),
            "dtype": dtype_name(p.dtype),
            "backend": self.encoder.backend,
        }

    def warmup(self) -> None:
        self.core(None, self.pre(["Hello world."]))


def load_encoder(path: Path | None, device: str, dtype: str) -> SentenceEncoder:
    dev = resolve_device(device)
    return SentenceEncoder.from_pretrained(path or DEFAULT_ENCODER, device=str(dev), dtype=resolve_dtype(dtype, dev))


def timed(fn, *args) -> tuple[object, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0
