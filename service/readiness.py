"""Readiness that proves the models work: checks at load and a warm-up that decodes.

``/health/ready`` turns 200 only after ``verify`` has passed for every loaded model:

* every floating-point weight and buffer is finite (a checkpoint with NaN/Inf is refused, naming
  the tensor);
* the tokenizer's vocabulary size equals the model's (a tokenizer of another model with the right
  file name would produce or read ids the model does not have);
* the translator translates a known sentence through the whole pre -> core -> post path into a
  non-empty text with a finite score; the encoder embeds one into a finite, non-zero vector.

Any failure raises ``ModelCheckFailed``; the app reports it through readiness (503) and
``rendition serve`` exits with status 1, as for any other load failure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

import numpy as np
import torch

if TYPE_CHECKING:
    from rendition.model.tokenizer import Tokenizer
    from rendition.service.engines import EmbeddingEngine, TranslationEngine

WARMUP_TEXT = {"en": "Hello world.", "fr": "Bonjour le monde."}


class ModelCheckFailed(RuntimeError):
    pass


def check_finite(kind: str, model: torch.nn.Module) -> None:
    for name, t in (*model.named_parameters(), *model.named_buffers()):
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            bad = int((~torch.isfinite(t)).sum())
            raise ModelCheckFailed(
                f"{kind}: weight {name!r} has {bad} non-finite values (NaN or Inf) of {t.numel()}; refusing to load"
            )


def check_vocab(kind: str, tokenizer: Tokenizer, model_vocab: int) -> None:
    if tokenizer.vocab_size != model_vocab:
        raise ModelCheckFailed(
            f"{kind}: the tokenizer has {tokenizer.vocab_size} pieces but the model's vocabulary is {model_vocab} "
            f"({tokenizer.path}); the tokenizer does not belong to this model"
        )


def check_translator(engine: TranslationEngine) -> None:
    tr = engine.translator
    check_finite("translator", tr.model)
    check_vocab("translator", tr.tokenizer, tr.model.cfg.vocab_size)


def check_encoder(engine: EmbeddingEngine) -> None:
    enc = engine.encoder
    check_finite("encoder", enc.model)
    check_vocab("encoder", enc.tokenizer, enc.model.cfg.vocab_size)


def warm_translator(engine: TranslationEngine) -> None:
    """Translate a known sentence (pre -> one search in this thread -> post, as a request would)."""
    from rendition.model.translation.options import TranslationOptions
    from rendition.service import admission
    from rendition.service.engines import TranslationJob  # (engines imports the model code; keep this light)

    admission.has_byte_fallback(engine.translator.tokenizer)  # (a scan of the vocabulary: here, not in a request)

    langs = engine.languages
    source = "en" if "en" in langs else langs[0]
    target = next((x for x in langs if x != source), source)
    opts = TranslationOptions(beam_size=2, num_hypotheses=1, max_length=16)
    job = TranslationJob([WARMUP_TEXT.get(source, "Hello world.")], source, target, opts, truncate=True)
    ids = engine.pre(job)
    (out,) = engine.post(job, ids, engine.translator.core(ids, job.options)).translations
    if not out.text.strip() or not math.isfinite(out.score):
        raise ModelCheckFailed(
            f"translator: warm-up translation {source}->{target} gave {out.text!r} (score {out.score}); "
            "expected a non-empty text with a finite score"
        )


def warm_encoder(engine: EmbeddingEngine) -> None:
    from rendition.service import admission
    from rendition.service.engines import EmbeddingJob

    admission.has_byte_fallback(engine.encoder.tokenizer)  # (a scan of the vocabulary: here, not in a request)
    job = EmbeddingJob(["Hello world."])
    ids = engine.pre(job)
    (v,) = engine.core(None, ids)  # (the encoder's only key)
    if not np.isfinite(v).all() or not float(np.linalg.norm(v)) > 0:
        raise ModelCheckFailed("encoder: warm-up embedding is not finite and non-zero")


WARM_SHAPES_TOKENS = 64  # one-sentence inputs up to this many tokens have their kernels made at start-up


def warm_encoder_shapes(engine: EmbeddingEngine, up_to: int = WARM_SHAPES_TOKENS) -> None:
    """Embed one sentence of each length from 1 to ``up_to`` tokens (at most the encoder's limit):
    the matmul kernels are made per number of rows, the first input of a new length paid for
    them (docs/benchmarks.md); a short sentence alone, the latency-sensitive case, then never does."""
    from rendition.service.engines import EmbeddingJob

    (hello,) = engine.pre(EmbeddingJob(["Hello world."]))
    for n in range(1, min(up_to, engine.encoder.max_length) + 1):
        engine.core(None, [[hello[i % len(hello)] for i in range(n)]])


def verify(kind: str, engine: TranslationEngine | EmbeddingEngine, warmup: bool = True) -> None:
    """The load-time checks, then (with ``warmup``) a real decode or encode."""
    if kind == "translator":
        check_translator(cast("TranslationEngine", engine))
        if warmup:
            warm_translator(cast("TranslationEngine", engine))
    else:
        check_encoder(cast("EmbeddingEngine", engine))
        if warmup:
            warm_encoder(cast("EmbeddingEngine", engine))
