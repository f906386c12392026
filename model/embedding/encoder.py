"""Sentence-embedding API and the ``rendition embed`` command, over the DiSAN encoder.

    enc = SentenceEncoder.from_pretrained()               # the shipped model/pretrained/encoder
    vecs = enc.encode(["A tool for X.", "Un outil pour X."])  # (2, enc.dim) float32, L2-normalised

On CPU with the DiSAN C kernel a batch runs packed (``rendition.model.embedding.packed``): the sentences'
tokens end to end, no padding, in passes of at most ``packed_tokens`` tokens.  Elsewhere it is
sorted by token count and cut into buckets of similar length, so padding (and the quadratic
token2token work spent on it) stays small.  Results come back in input order either way.

``compute_type`` (``rendition.model.kernels.compute_type.resolve_encoder_compute_type``): "auto" is bfloat16
on a CPU with AVX-512 BF16 or AMX, else float32; "int8" (CPU, opt-in) runs every linear map of the
model in int8 (``rendition.model.kernels.linear``), the rest in float32.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from rendition.model.embedding import packed
from rendition.model.embedding.disan import DiSAN, DiSANConfig, compile_enabled
from rendition.model.kernels.compute_type import resolve_encoder_compute_type
from rendition.model.kernels.linear import convert_linears
from rendition.model.text.segment import InputTooLong
from rendition.model.tokenizer import PAD_ID, Tokenizer
from rendition.model.weights import load_pretrained, resolve_device, save_weights, shipped_model

DEFAULT_ENCODER = shipped_model("encoder")


class SentenceEncoder:
    # padded buckets: at most max_batch_tokens padded tokens and batch_size sentences (default 64);
    # packed passes: at most packed_tokens tokens (and batch_size sentences when one is given).
    # 2048: on 2 cores packed throughput changes little from 512 to 4096 tokens (docs/experiments.md).
    #
    # compute_type: "int8" replaces the model's linear maps by int8 ones (rendition.model.kernels.linear; CPU
    # inference, float32 model); None or a float type: the model as it is.
    def __init__(
        self,
        model: DiSAN,
        tokenizer: Tokenizer,
        max_batch_tokens: int = 16384,
        packed_tokens: int = 2048,
        compute_type: str | None = None,
    ):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.max_batch_tokens = max_batch_tokens
        self.packed_tokens = packed_tokens
        self.parameter_count = sum(p.numel() for p in model.parameters())  # (before any conversion)
        if compute_type == "int8" and next(model.parameters()).device.type == "cpu":
            convert_linears(self.model, compute_type)
            self.compute_type = compute_type
        else:
            self.compute_type = str(next(model.parameters()).dtype).removeprefix("torch.")

    @classmethod
    def from_pretrained(
        cls,
        path: str | Path | None = None,
        device: str = "auto",
        dtype: str | torch.dtype | None = None,
        compute_type: str | None = None,
    ) -> SentenceEncoder:
        """``compute_type``: auto, int8, bfloat16, float32 or float16
        (``resolve_encoder_compute_type``), taking precedence over ``dtype``; None: ``dtype`` alone."""
        path = Path(path) if path is not None else DEFAULT_ENCODER
        if compute_type is not None:
            compute_type, dtype = resolve_encoder_compute_type(compute_type, resolve_device(device), dtype)
        model = load_pretrained(DiSAN, DiSANConfig, path, device, dtype)
        return cls(model, Tokenizer(path / "sentencepiece.model"), compute_type=compute_type)

    def save_pretrained(self, path: str | Path, dtype: torch.dtype = torch.float16, int8_embeddings: bool = True) -> None:
        """config.json + model.safetensors + sentencepiece.model in ``path``.  Weights in ``dtype``; the
        token-embedding table (most of the parameters) as int8 rows with a scale each unless
        ``int8_embeddings`` is False: half the bytes, and on the shipped encoder fidelity moves by 1e-4."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.model.cfg.save(path / "config.json")
        save_weights(self.model.state_dict(), path / "model.safetensors", dtype, ("embed.weight",) if int8_embeddings else ())
        dst = path / "sentencepiece.model"
        if self.tokenizer.path.resolve() != dst.resolve():
            dst.write_bytes(self.tokenizer.path.read_bytes())

    @property
    def dim(self) -> int:
        return self.model.cfg.dim

    @property
    def max_length(self) -> int:
        return self.model.cfg.max_length

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def backend(self) -> str:
        """How a batch runs here: "cpu-kernel-packed" (the native DiSAN kernel on packed tokens),
        "torch-compile" (padded buckets, compiled tiles: CUDA) or "torch" (padded, eager tiles)."""
        if packed.available(self.model):
            return "cpu-kernel-packed"
        return "torch-compile" if compile_enabled(self.device) else "torch"

    def tokenize(self, sentences: Sequence[str], truncate: bool = False) -> list[list[int]]:
        """Token ids per sentence.  A sentence over ``max_length`` tokens raises ``InputTooLong``,
        or with ``truncate`` is cut to its first ``max_length`` tokens (TEI's ``truncate``)."""
        out = self.tokenizer.encode(sentences)
        for i, ids in enumerate(out):
            if len(ids) > self.max_length and not truncate:
                raise InputTooLong(i, len(ids), self.max_length)
        return [ids[: self.max_length] for ids in out]

    def count_tokens(self, sentences: Sequence[str]) -> list[int]:
        """Tokens the model reads per sentence (at most max_length)."""
        return [len(ids) for ids in self.tokenize(sentences, truncate=True)]

    @staticmethod
    def pad(seqs: Sequence[Sequence[int]], device: torch.device | None = None) -> torch.Tensor:
        n = max([len(s) for s in seqs] + [1])
        ids = torch.full((len(seqs), n), PAD_ID, dtype=torch.long)
        for row, s in enumerate(seqs):
            ids[row, : len(s)] = torch.tensor(s, dtype=torch.long)
        return ids.to(device) if device is not None else ids

    def buckets(self, lengths: Sequence[int], batch_size: int) -> list[list[int]]:
        """Indices sorted by length, cut at batch_size rows or max_batch_tokens padded tokens."""
        order = sorted(range(len(lengths)), key=lambda i: lengths[i])
        out: list[list[int]] = []
        cur: list[int] = []
        for i in order:
            if cur and (len(cur) >= batch_size or (len(cur) + 1) * max(lengths[i], 1) > self.max_batch_tokens):
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
        return out

    def passes(self, lengths: Sequence[int], batch_size: int | None = None) -> list[list[int]]:
        """Packed passes: indices in input order, cut at packed_tokens tokens (and batch_size
        sentences when given); a sentence longer than packed_tokens gets a pass of its own."""
        out: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i, n in enumerate(lengths):
            if cur and (tokens + n > self.packed_tokens or (batch_size is not None and len(cur) >= batch_size)):
                out.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += n
        if cur:
            out.append(cur)
        return out

    @torch.inference_mode()
    def embed_ids(self, seqs: Sequence[Sequence[int]], batch_size: int | None = None) -> np.ndarray:
        """Token ids (each within max_length) -> (N, dim) float32 vectors, not normalised; packed
        passes where the backend allows, else padded length buckets."""
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        out = np.zeros((len(seqs), self.dim), dtype=np.float32)
        if packed.available(self.model):
            for idx in self.passes([len(s) for s in seqs], batch_size):
                ids, offsets = packed.pack([seqs[i] for i in idx])
                out[idx] = packed.packed_forward(self.model, ids, offsets).float().numpy()
            return out
        for idx in self.buckets([len(s) for s in seqs], batch_size or 64):
            ids = self.pad([seqs[i] for i in idx], self.device)  # (b, n)
            out[idx] = self.model(ids).float().cpu().numpy()  # (b, dim)
        return out

    def encode(
        self, sentences: Sequence[str], batch_size: int | None = None, normalize: bool = True, truncate: bool = False
    ) -> np.ndarray:
        """(N, dim) float32 sentence vectors, L2-normalised unless ``normalize`` is False.
        batch_size: sentences per forward pass (default: 64 padded; packed: by tokens only)."""
        if isinstance(sentences, str):
            raise TypeError("encode takes a sequence of sentences, not a single string")
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not sentences:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self.embed_ids(self.tokenize(sentences, truncate), batch_size)
        if normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="rendition embed", description="Embed lines from stdin (one sentence per line).")
    ap.add_argument("--model", default=None, help="encoder directory (default: the shipped model)")
    ap.add_argument("--output", "-o", default=None, help="write an (N, dim) float32 .npy here instead of JSON lines")
    ap.add_argument("--batch-size", type=int, default=None, help="sentences per forward pass (default: 64 padded, by tokens packed)")
    ap.add_argument("--no-normalize", action="store_true", help="do not L2-normalise the vectors")
    ap.add_argument("--truncate", action="store_true", help="cut lines over the model's max_length (default: refuse)")
    ap.add_argument("--device", default="auto")
    ap.add_argument(
        "--compute-type", default="auto", choices=["auto", "int8", "bfloat16", "float32", "float16"],
        help="auto: bfloat16 on a CPU with AVX-512 BF16 or AMX, else float32; int8: linear maps in int8 (CPU)",
    )  # fmt: skip
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.threads:
        torch.set_num_threads(args.threads)
    lines = [line.rstrip("\n") for line in sys.stdin]
    enc = SentenceEncoder.from_pretrained(args.model, device=args.device, compute_type=args.compute_type)
    vecs = enc.encode(lines, batch_size=args.batch_size, normalize=not args.no_normalize, truncate=args.truncate)
    if args.output:
        np.save(args.output, vecs)
        print(f"wrote {vecs.shape[0]} x {vecs.shape[1]} embeddings to {args.output}", file=sys.stderr)
        return
    w = sys.stdout
    for line, v in zip(lines, vecs):
        w.write(json.dumps({"text": line, "embedding": [round(float(x), 6) for x in v]}) + "\n")
    w.flush()


if __name__ == "__main__":
    main()
