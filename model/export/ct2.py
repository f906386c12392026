"""Export to CTranslate2 and run the exported model as a translation engine.

CTranslate2 (OpenNMT) implements the same architecture family as ``rendition.model.translation.transformer``:
``TransformerSpec.from_config(..., with_relative_position=True, pre_norm=True)`` is the
OpenNMT-py "Shaw et al. 2018" Transformer, whose attention is, per head,

    e_ij = (s q_i) . (k_j + w^K[clip(j - i, k) + k]),   s = queries_scale = 1/sqrt(head_dim)
    z_i  = sum_j softmax(e)_ij (v_j + w^V[clip(j - i, k) + k])

with one (2k+1, head_dim) key table and one value table per self-attention layer, shared
across heads; k is not stored: CTranslate2 reads it from the table shape, (rows - 1) / 2.  This
is exactly our attention (queries are scaled before both the content and the relative term),
so the export is a renaming plus three layout changes:

* q/k/v of self-attention are fused into one (3D, D) linear, k/v of cross-attention into (2D, D);
* the tied embedding matrix is written three times (source, target, output projection, no
  bias); CTranslate2 aliases the duplicates on save;
* ``scale_embeddings`` multiplies embeddings by sqrt(d_model), like ``Transformer.emb_scale``.

Other settings that must match: ``layer_norm_epsilon`` (our 1e-6) goes in the model config;
the decoder starts from ``<s>``; no source BOS/EOS is added by CTranslate2 (our preprocessing
already writes ``[<2xx>, pieces..., </s>]``).  Models without relative positions get their
sinusoidal table written explicitly as ``position_encodings/encodings`` (CTranslate2's own
table concatenates sin|cos, ours interleaves them), and a model with no positions at all gets
an all-zero table.  Relative *and* sinusoidal positions together cannot be expressed (the spec
has no position encoder when relative positions are on) and are refused; key-only relative
positions (``relative_values=False``) export an all-zero value table, which is exact.

Search differences (documented, not hidden): CTranslate2's length penalty divides the score by
length ** alpha, ours by the GNMT ((5 + L) / 6) ** alpha, so n-best orders agree only for
alpha = 0; at ``max_decoding_length`` CTranslate2 stops without forcing ``</s>`` (ours forces
it), and it takes one ``max_decoding_length`` per call (we pass the largest of our per-sentence
caps min(max_length, a * src_len + b)).

    rendition export-ct2 [MODEL_DIR] OUT_DIR [--quantization int8] [--force]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from rendition.model.tokenizer import EOS_ID, UNK_ID, Tokenizer
from rendition.model.translation.options import SearchStats, TranslationOptions
from rendition.model.translation.search import Hypothesis, max_output_lengths
from rendition.model.translation.transformer import (
    FeedForward,
    MultiHeadAttention,
    Transformer,
    TransformerConfig,
    sinusoidal_table,
)
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator
from rendition.model.weights import ModelLoadError, load_weights

if TYPE_CHECKING:
    from rendition.model.translation.shortlist import Shortlist

RENDITION_CONFIG = "rendition_config.json"  # our TransformerConfig (ct2 owns config.json)
SP_MODEL = "sentencepiece.model"


def _t(x: Tensor) -> Tensor:
    return x.detach().to(torch.float32).contiguous().clone()


def _set_linear(spec: Any, lin: torch.nn.Linear) -> None:
    spec.weight = _t(lin.weight)  # (out, in), the layout ct2 expects
    if lin.bias is not None:
        spec.bias = _t(lin.bias)


def _set_fused(spec: Any, lins: Sequence[torch.nn.Linear]) -> None:
    spec.weight = torch.cat([_t(lin.weight) for lin in lins], 0)  # (n * out, in)
    spec.bias = torch.cat([_t(lin.bias) for lin in lins], 0)


def _set_norm(spec: Any, norm: torch.nn.LayerNorm) -> None:
    spec.gamma = _t(norm.weight)
    spec.beta = _t(norm.bias)


def _set_attention(spec: Any, norm: torch.nn.LayerNorm, attn: MultiHeadAttention, self_attention: bool) -> None:
    _set_norm(spec.layer_norm, norm)
    if self_attention:
        _set_fused(spec.linear[0], [attn.q_proj, attn.k_proj, attn.v_proj])
    else:
        _set_linear(spec.linear[0], attn.q_proj)
        _set_fused(spec.linear[1], [attn.k_proj, attn.v_proj])
    _set_linear(spec.linear[-1], attn.out_proj)
    if attn.k is not None:
        spec.relative_position_keys = _t(attn.rel_k)  # (2k+1, Dh)
        spec.relative_position_values = _t(attn.rel_v) if attn.rel_v is not None else torch.zeros_like(attn.rel_k)


def _set_ffn(spec: Any, norm: torch.nn.LayerNorm, ffn: FeedForward) -> None:
    _set_norm(spec.layer_norm, norm)
    _set_linear(spec.linear_0, ffn.fc1)
    _set_linear(spec.linear_1, ffn.fc2)


def build_spec(model: Transformer, pieces: Sequence[str]) -> Any:
    """A validated ``ctranslate2.specs.TransformerSpec`` holding ``model``'s weights."""
    from ctranslate2.specs import common_spec, transformer_spec

    cfg = model.cfg
    if cfg.relative_positions and cfg.sinusoidal_positions:
        raise NotImplementedError("CTranslate2 cannot combine relative positions with sinusoidal positions")
    if len(pieces) != cfg.vocab_size:
        raise ValueError(f"tokenizer has {len(pieces)} pieces but the model vocabulary is {cfg.vocab_size}")
    spec = transformer_spec.TransformerSpec.from_config(
        (cfg.n_encoder_layers, cfg.n_decoder_layers),
        cfg.n_heads,
        with_relative_position=cfg.relative_positions,
        pre_norm=True,
        activation=common_spec.Activation.RELU,
    )
    emb = _t(model.embed.weight)  # (V, D), tied everywhere
    if not cfg.relative_positions:
        # Explicit table: ours is interleaved sin/cos (or nothing at all -> zeros).
        table = sinusoidal_table(cfg.max_positions, cfg.d_model) if cfg.sinusoidal_positions else None
        table = table if table is not None else torch.zeros(cfg.max_positions, cfg.d_model)
        spec.encoder.position_encodings.encodings = table.clone()
        spec.decoder.position_encodings.encodings = table.clone()

    enc = spec.encoder
    enc.embeddings[0].weight = emb.clone()
    enc.scale_embeddings = True  # * sqrt(d_model)
    _set_norm(enc.layer_norm, model.encoder_norm)
    for ls, layer in zip(enc.layer, model.encoder_layers):
        _set_attention(ls.self_attention, layer.self_attn_norm, layer.self_attn, self_attention=True)
        _set_ffn(ls.ffn, layer.ffn_norm, layer.ffn)

    dec = spec.decoder
    dec.embeddings.weight = emb.clone()
    dec.scale_embeddings = True
    _set_norm(dec.layer_norm, model.decoder_norm)
    dec.projection.weight = emb.clone()  # tied output projection, no bias
    for ls, dlayer in zip(dec.layer, model.decoder_layers):
        _set_attention(ls.self_attention, dlayer.self_attn_norm, dlayer.self_attn, self_attention=True)
        _set_attention(ls.attention, dlayer.cross_attn_norm, dlayer.cross_attn, self_attention=False)
        _set_ffn(ls.ffn, dlayer.ffn_norm, dlayer.ffn)

    pieces = list(pieces)
    spec.register_source_vocabulary(pieces)
    spec.register_target_vocabulary(pieces)
    conf = spec.config
    conf.layer_norm_epsilon = cfg.layer_norm_eps
    conf.unk_token = pieces[UNK_ID]
    conf.bos_token = pieces[cfg.bos_id]
    conf.eos_token = pieces[cfg.eos_id]
    conf.decoder_start_token = pieces[cfg.bos_id]
    conf.add_source_bos = False
    conf.add_source_eos = False
    spec.validate()
    return spec


def export_ct2(
    model_dir: str | Path, out_dir: str | Path, quantization: str | None = None, force: bool = False, shortlist: Shortlist | None = None
) -> Path:
    """Write a CTranslate2 model directory for the rendition model in ``model_dir``.

    The output also holds our SentencePiece model and TransformerConfig (``rendition_config.json``)
    so that ``CT2Translator.from_pretrained(out_dir)`` needs nothing else.  ``shortlist`` (a
    ``rendition.model.translation.shortlist.Shortlist``): also its vocabulary map (``vmap.txt``), for
    CTranslate2's ``use_vmap``."""
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not force:
        raise FileExistsError(f"{out_dir} exists and is not empty (use --force to overwrite)")
    for name in ("config.json", "model.safetensors", SP_MODEL):
        if not (model_dir / name).is_file():
            raise ModelLoadError(f"{model_dir}: missing {name}")
    cfg = TransformerConfig.load(model_dir / "config.json")
    model = Transformer(cfg)
    load_weights(model, model_dir / "model.safetensors")
    tokenizer = Tokenizer(model_dir / SP_MODEL)
    spec = build_spec(model.eval(), tokenizer.pieces())
    spec.register_file(str(model_dir / SP_MODEL), SP_MODEL)
    spec.register_file(str(model_dir / "config.json"), RENDITION_CONFIG)
    spec.optimize(quantization=quantization)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        if shortlist is not None:
            from rendition.model.export.shortlist import write_vmap

            spec.register_vocabulary_mapping(str(write_vmap(shortlist, tokenizer.pieces(), Path(tmp) / "vmap.txt")))
        spec.save(str(out_dir))
    return out_dir


def is_ct2_dir(path: str | Path) -> bool:
    return (Path(path) / "model.bin").is_file() and (Path(path) / RENDITION_CONFIG).is_file()


# -- engine ------------------------------------------------------------------------------------
class CT2Engine:
    """``core(sources, opts)`` over a ``ctranslate2.Translator``: same ids in, same (ids, score) out
    as ``Translator.core``; ids are mapped to pieces with the tokenizer's vocabulary.

    ``threads`` is CTranslate2's ``intra_threads`` (per worker), ``inter_threads`` its number of
    workers; the workers share the batches ``core`` cuts under its token budget, so with more than
    one worker pass a budget that leaves each of them batches to run."""

    def __init__(
        self,
        ct2_dir: str | Path,
        pieces: Sequence[str],
        device: str = "cpu",
        compute_type: str = "default",
        threads: int = 0,
        max_batch_tokens: int = 8192,
        inter_threads: int = 1,
        use_vmap: bool = False,
    ):
        """``use_vmap``: restrict each batch's vocabulary with the model directory's ``vmap.txt``
        (``export_ct2(shortlist=...)``)."""
        import ctranslate2

        self.translator = ctranslate2.Translator(
            str(ct2_dir), device=device, compute_type=compute_type, inter_threads=inter_threads, intra_threads=threads
        )
        self.pieces = list(pieces)
        self.ids = {p: i for i, p in enumerate(self.pieces)}
        self.max_batch_tokens = max_batch_tokens
        self.device = device
        self.use_vmap = use_vmap

    def to_pieces(self, ids: Sequence[int]) -> list[str]:
        return [self.pieces[i] for i in ids]

    def to_ids(self, pieces: Sequence[str]) -> list[int]:
        return [self.ids.get(p, UNK_ID) for p in pieces]

    def core(
        self,
        sources: list[list[int]],
        opts: TranslationOptions,
        max_batch_tokens: int | None = None,
        stats: SearchStats | None = None,
    ) -> list[list[Hypothesis]]:
        """Like ``Translator.core``; ct2 sorts by length and splits under the token budget itself.
        ``stats.decode_steps``, when given, gets the longest output + 1 (ct2 does not report steps)."""
        if not sources:
            return []
        lens = [len(s) for s in sources]
        max_len = max(max_output_lengths(lens, opts))
        budget = self.max_batch_tokens if max_batch_tokens is None else max_batch_tokens
        per_batch = max(1, budget // opts.beam_size)  # source tokens per ct2 batch
        per_batch = 0 if per_batch >= sum(lens) else per_batch  # 0: one batch (ct2 allocates by it)
        results = self.translator.translate_batch(
            [self.to_pieces(s) for s in sources],
            max_batch_size=per_batch,
            batch_type="tokens",
            beam_size=opts.beam_size,
            num_hypotheses=opts.num_hypotheses,
            length_penalty=opts.length_penalty,
            max_decoding_length=max_len,
            min_decoding_length=opts.min_length,
            max_input_length=0,
            return_scores=True,
            repetition_penalty=opts.repetition_penalty,
            no_repeat_ngram_size=opts.no_repeat_ngram_size,
            target_prefix=[self.to_pieces(opts.target_prefix)] * len(sources) if opts.target_prefix else None,
            sampling_topk=opts.sampling_topk,
            sampling_temperature=opts.sampling_temperature,
            use_vmap=self.use_vmap,
        )
        out = []
        for r in results:
            hyps = []
            for toks, score in zip(r.hypotheses, r.scores):
                ids = self.to_ids(toks)
                hyps.append(Hypothesis([i for i in ids if i != EOS_ID], float(score)))
            out.append(hyps)
        longest = max(len(h.tokens) for hyps in out for h in hyps)
        if stats is not None:
            stats.decode_steps += min(longest + 1, max_len)
        return out

    def score(self, sources: list[list[int]], targets: list[list[int]]) -> list[list[float]]:
        """Teacher-forced log-probabilities of each target token and of the final ``</s>``."""
        res = self.translator.score_batch(
            [self.to_pieces(s) for s in sources], [self.to_pieces(t) for t in targets], max_input_length=0
        )
        return [list(r.log_probs) for r in res]


class CT2Translator(Translator):
    """``Translator`` whose core runs on CTranslate2; pre/post-processing are shared (inherited)."""

    def __init__(self, engine: CT2Engine, tokenizer: Tokenizer, cfg: TransformerConfig):
        # No torch model: everything ``Translator`` needs from it is the config (``languages``, ``preprocess``).
        self.engine = engine
        self.tokenizer = tokenizer
        self.cfg = cfg
        self.max_batch_tokens = engine.max_batch_tokens
        self.stats = SearchStats()

    @classmethod
    def from_pretrained(  # type: ignore[override]
        cls,
        path: str | Path | None = None,
        device: str = "auto",
        compute_type: str = "default",
        threads: int = 0,
    ) -> CT2Translator:
        """``path`` is a directory written by ``export_ct2``."""
        path = Path(path) if path is not None else DEFAULT_TRANSLATOR
        if not is_ct2_dir(path):
            raise ModelLoadError(f"{path} is not a CTranslate2 export (run `rendition export-ct2`)")
        if device == "auto":
            import ctranslate2

            device = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        tokenizer = Tokenizer(path / SP_MODEL)
        cfg = TransformerConfig.load(path / RENDITION_CONFIG)
        return cls(CT2Engine(path, tokenizer.pieces(), device, compute_type, threads), tokenizer, cfg)

    @property
    def device(self) -> torch.device:
        return torch.device(self.engine.device)

    def core(self, sources: list[list[int]], opts: TranslationOptions) -> list[list[Hypothesis]]:
        return self.engine.core(sources, opts, self.max_batch_tokens, self.stats)


# -- CLI ---------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        prog="rendition export-ct2",
        usage="rendition export-ct2 [MODEL_DIR] OUT_DIR [--quantization TYPE] [--force]",
        description="export a translator to a CTranslate2 model directory",
    )
    p.add_argument("paths", nargs="+", metavar="DIR", help="MODEL_DIR (default: the shipped model), then OUT_DIR")
    p.add_argument("--quantization", default=None, help="ct2 weight type: int8, int8_float32, float16, float32, ...")
    p.add_argument("--force", action="store_true", help="overwrite OUT_DIR")
    args = p.parse_args(argv)
    if len(args.paths) > 2:
        p.error("expected [MODEL_DIR] OUT_DIR")
    model_dir, out_dir = (DEFAULT_TRANSLATOR, args.paths[0]) if len(args.paths) == 1 else args.paths
    try:
        out = export_ct2(model_dir, out_dir, quantization=args.quantization, force=args.force)
    except (ModelLoadError, FileExistsError, NotImplementedError, ValueError) as e:
        raise SystemExit(f"rendition export-ct2: error: {e}") from e
    cfg = json.loads((out / RENDITION_CONFIG).read_text())
    k = cfg["max_relative_position"] if cfg["relative_positions"] else None
    print(
        f"wrote {out} (layers {cfg['n_encoder_layers']}/{cfg['n_decoder_layers']}, d_model {cfg['d_model']}, "
        f"relative k={k}, embeddings x{math.sqrt(cfg['d_model']):.1f})"
    )


if __name__ == "__main__":
    main()
