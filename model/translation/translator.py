"""High-level translation API: pre (SentencePiece + target tag) -> core (beam search) -> post.

    tr = Translator.from_pretrained()          # the shipped default model
    tr.translate(["Hello"], source="en", target="fr", beam_size=4)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch

from rendition.model.kernels import native
from rendition.model.kernels.compute_type import resolve_compute_type, weight_bytes
from rendition.model.text.segment import InputTooLong
from rendition.model.tokenizer import EOS_ID, Tokenizer
from rendition.model.translation.backends import FusedCPUBackend, TorchBackend, select_backend
from rendition.model.translation.options import SearchStats, TranslationOptions
from rendition.model.translation.scheduler import TranslationScheduler, worker_layout
from rendition.model.translation.search import Hypothesis, generate_ids
from rendition.model.translation.shortlist import Shortlist, resolve_shortlist
from rendition.model.translation.transformer import Transformer, TransformerConfig
from rendition.model.weights import bound_c_heap, load_pretrained, release_freed_memory, resolve_device, shipped_model

DEFAULT_TRANSLATOR = shipped_model("translator")


@dataclass
class Translation:
    text: str
    score: float
    tokens: list[int]
    hypotheses: list[tuple[str, float]] = field(default_factory=list)  # n-best, best first


KV_CACHE_DTYPES = ("float32", "float16", "bfloat16")


def resolve_kv_dtype(name: str | torch.dtype | None) -> torch.dtype | None:
    """``"auto"`` / None: the model's dtype; otherwise one of KV_CACHE_DTYPES (a name or a torch dtype)."""
    if name is None or name == "auto":
        return None
    key = str(name).removeprefix("torch.")
    if key not in KV_CACHE_DTYPES:
        raise ValueError(f"kv_cache_dtype must be auto or one of {KV_CACHE_DTYPES}, not {name!r}")
    return getattr(torch, key)


class Translator:
    """``kv_cache_dtype``: how the decoder's self-attention keys and values are stored during a
    search (None: the model's dtype).  float16 halves the memory each step reads, which keeps the
    step cost flatter as outputs grow; the attention itself still computes in the model's dtype.

    ``backend``: how the model runs (``rendition.model.translation.backends``), chosen once here for the
    model as it is given (device, dtype): move the model before making its Translator.

    ``compute_type``: "int8" runs the model's linear maps in int8 (``rendition.model.kernels.compute_type``;
    the caller has checked it can run here); None, the model in its own dtype.

    ``shortlist``: a vocabulary shortlist (``rendition.model.translation.shortlist``): each decoding
    step then computes the logits of the batch's candidate tokens only (None: the whole vocabulary)."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        max_batch_tokens: int = 16384,
        kv_cache_dtype: str | torch.dtype | None = None,
        compute_type: str | None = None,
        shortlist: Shortlist | None = None,
    ):
        self.model = model.eval()
        self.cfg = model.cfg
        self.tokenizer = tokenizer
        self.max_batch_tokens = max_batch_tokens
        self.kv_cache_dtype = resolve_kv_dtype(kv_cache_dtype)
        int8 = compute_type == "int8"
        if int8 and self.kv_cache_dtype not in (None, torch.float32, torch.float16):
            raise ValueError(f"compute_type int8 stores the K/V cache in float32 or float16, not {self.kv_cache_dtype}")
        self.backend: TorchBackend = select_backend(self.model, "int8" if int8 else "float32")
        self.compute_type = "int8" if int8 else str(next(self.model.parameters()).dtype).removeprefix("torch.")
        if shortlist is not None and shortlist.vocab_size != self.cfg.vocab_size:
            raise ValueError(f"the shortlist is for a vocabulary of {shortlist.vocab_size}, the model has {self.cfg.vocab_size}")
        self.backend.shortlist = self.shortlist = shortlist
        self.stats = SearchStats()  # every search's, summed (decode steps) and at most (cache size)
        self.scheduler: TranslationScheduler | None = None

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path | None = None,
        device: str = "auto",
        dtype: str | torch.dtype | None = None,
        kv_cache_dtype: str | torch.dtype | None = None,
        compute_type: str | None = None,
        shortlist: bool | str | Path | Shortlist | None = None,
    ) -> Translator:
        """``compute_type`` (``rendition.model.kernels.compute_type``): auto, int8, float32, float16 or
        bfloat16, taking precedence over ``dtype``; None: ``dtype`` alone.  ``shortlist``: True for
        the model directory's ``shortlist.safetensors``, a path to one, or a ``Shortlist``; None or
        False: none (``ShortlistError`` when asked for and missing or not this model's).  glibc's malloc gets
        ``bound_c_heap``'s settings first.  In int8 the model's float32
        copies of the quantised weights are released once the int8 tables are built.  Then the C
        heap's free pages, what loading allocated and freed, go back to the system
        (``release_freed_memory``)."""
        path = Path(path) if path is not None else DEFAULT_TRANSLATOR
        bound_c_heap()  # (before the load and the searches allocate)
        if compute_type is not None:
            compute_type, dtype = resolve_compute_type(compute_type, resolve_device(device), dtype)
        model = load_pretrained(Transformer, TransformerConfig, path, device, dtype)
        sl = resolve_shortlist(shortlist, path, model.cfg.vocab_size)
        tr = cls(model, Tokenizer(path / "sentencepiece.model"), kv_cache_dtype=kv_cache_dtype, compute_type=compute_type,
                 shortlist=sl)  # fmt: skip
        if tr.compute_type == "int8":
            assert isinstance(tr.backend, FusedCPUBackend)  # (int8 runs there only)
            tr.backend.fused.release_float_weights()
        release_freed_memory()  # (what loading freed: the file's tensors, the float32 weights int8 replaced)
        return tr

    @property
    def weight_bytes(self) -> int:
        """Bytes of the weights resident for inference (``rendition.model.kernels.compute_type.weight_bytes``)."""
        return weight_bytes(self.model, self.backend)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def languages(self) -> tuple[str, ...]:
        return self.cfg.languages

    def check_pair(self, source: str, target: str) -> None:
        langs = self.languages
        if source not in langs or target not in langs or source == target:
            pairs = ", ".join(f"{a}-{b}" for a in langs for b in langs if a != b)
            raise ValueError(f"unsupported language pair {source}-{target}; supported: {pairs}")

    # -- pre / core / post ----------------------------------------------------------------------
    def preprocess(self, texts: Sequence[str], target: str) -> list[list[int]]:
        """[target tag, ids..., </s>] per text; ``InputTooLong`` for a text over the encoder's
        max_positions - 2 tokens: an input is never cut silently."""
        tag, limit = self.tokenizer.lang_id(target), self.cfg.max_positions - 2
        out = []
        for i, ids in enumerate(self.tokenizer.encode(texts)):
            if len(ids) > limit:
                raise InputTooLong(i, len(ids), limit, "sentence")
            out.append([tag, *ids, EOS_ID])
        return out

    def core(self, sources: list[list[int]], opts: TranslationOptions) -> list[list[Hypothesis]]:
        """n-best hypotheses per source, in input order: on the step-level scheduler once
        ``start_workers`` ran, else in one search here, the running sentences under
        ``max_batch_tokens``."""
        if opts.kv_cache_dtype is None and self.kv_cache_dtype is not None:
            opts = replace(opts, kv_cache_dtype=self.kv_cache_dtype)
        if self.scheduler is not None:
            ticket = self.scheduler.submit(sources, opts)
            try:
                return ticket.future.result()
            finally:
                self.stats.add(ticket.stats)
        try:
            return generate_ids(self.backend, sources, opts, self.max_batch_tokens, self.stats)
        finally:
            native.release_scratch()  # (this thread's large kernel buffers: the batch is done,
            release_freed_memory()  # and the heap's free pages)

    def start_workers(self, workers: int = 0, threads: int = 0, cores: int = 0) -> tuple[int, int]:
        """From now on ``core`` / ``translate`` run on the step-level scheduler
        (``rendition.model.translation.scheduler``): ``workers`` continuous searches of ``threads`` threads
        each (CTranslate2's inter_threads / intra_threads; 0: ``worker_layout``'s choice for ``cores``,
        by default the threads torch uses here).  Returns the layout; ``close()`` stops the workers."""
        self.close()
        workers, threads = worker_layout(workers, threads, cores, device=self.device.type)
        self.scheduler = TranslationScheduler(
            self.backend, workers, threads, max_tokens=self.max_batch_tokens, kv_cache_dtype=self.kv_cache_dtype
        )
        return workers, threads

    def close(self) -> None:
        if self.scheduler is not None:
            self.scheduler.close()
            self.scheduler = None

    def postprocess(self, results: list[list[Hypothesis]]) -> list[Translation]:
        out = []
        for hyps in results:
            texts = self.tokenizer.decode([h.tokens for h in hyps])
            nbest = list(zip(texts, [h.score for h in hyps]))
            out.append(Translation(texts[0], hyps[0].score, hyps[0].tokens, nbest))
        return out

    def translate(
        self,
        texts: Sequence[str],
        source: str,
        target: str,
        beam_size: int = 4,
        num_hypotheses: int = 1,
        length_penalty: float = 1.0,
        max_length: int = 256,
        min_length: int = 0,
    ) -> list[Translation]:
        self.check_pair(source, target)
        if not texts:
            return []
        opts = TranslationOptions(
            beam_size=beam_size,
            num_hypotheses=num_hypotheses,
            length_penalty=length_penalty,
            max_length=max_length,
            min_length=min_length,
        )
        return self.postprocess(self.core(self.preprocess(texts, target), opts))
