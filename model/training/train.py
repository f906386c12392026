"""Training of the relative-position translator on the DDTP splits or the broad corpus (``--corpus``).

Token-budget batches over both directions (the target-language tag picks the direction), Adam
with inverse-square-root warm-up, label smoothing, dropout, gradient clipping, periodic
validation loss and BLEU, checkpoints (safetensors + JSON, no pickle) with resume, checkpoint
averaging at the end, and loss/BLEU curves as PNG.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from rendition.model.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer, train_tokenizer
from rendition.model.training.checkpoints import average_checkpoints, load_checkpoint, save_checkpoint
from rendition.model.training.corpus.rows import cap_sources, read_rows
from rendition.model.training.curves import Line, Panel, plot_curves
from rendition.model.training.data import SPLITS_DIR, Pair, parse_cap, parse_upsample, read_tsv, split_source
from rendition.model.translation.transformer import Transformer, TransformerConfig

Example = tuple[list[int], list[int]]  # (tagged source ids + EOS, target ids)


@dataclass
class TrainConfig:
    run_dir: str = "runs/translator"
    pairs: tuple[str, ...] = ("en-fr",)  # language pairs trained in both directions; the corpus is the first one's
    vocab_size: int = 8000
    tokenizer_langs: tuple[str, ...] = ("en", "fr", "de")
    max_tokens: int = 6000  # per batch, counted as n * max(src_len, tgt_len)
    max_len: int = 160  # longer examples are skipped in training
    lr: float = 1e-3
    warmup: int = 1000
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    max_steps: int = 100_000
    max_minutes: float = 120.0
    eval_every: int = 500
    save_every: int = 500
    keep_checkpoints: int = 5  # averaged at the end
    bleu_sentences: int = 200  # per direction, greedy, for validation BLEU
    threads: int = 2
    seed: int = 1
    corpus: str = ""  # source<TAB>English<TAB>other rows of the first pair (rendition.model.training.corpus.build); empty: the DDTP train split
    upsample: str = "dialogue=3"  # corpus sources repeated n times per epoch, "name=n,name=n"
    cap: str = ""  # corpus sources trained on n of their rows at most (a seeded choice), "name=n,name=n"
    valid_sets: str = "en-fr"  # validation loss on data/splits/valid.<name>.tsv, comma-separated (first 500 pairs each)
    byte_fallback: bool = False  # tokenizer: unknown characters as byte pieces
    init_from: str = ""  # start from an exported model directory's weights (fresh optimizer)
    anchor_from: str = ""  # a model directory of the run's shape and tokenizer whose output distribution anchors the training rows (see ``Session.step``)
    anchor_weight: float = 10.0  # lambda: an anchored token's loss is CE(reference) + lambda * KL(anchor || model)
    anchor_skip: str = ""  # corpus sources whose rows learn from their references only, "name,name"
    device: str = "cpu"
    amp: str = "none"  # "bf16": autocast to bfloat16 (master weights stay float32)


def load_examples(tok: Tokenizer, pairs: Sequence[Pair], src_lang: str, tgt_lang: str, max_len: int) -> list[Example]:
    tag = tok.lang_id(tgt_lang)
    src = tok.encode([p.src if src_lang == "en" else p.tgt for p in pairs])
    tgt = tok.encode([p.tgt if src_lang == "en" else p.src for p in pairs])
    return [([tag, *s, EOS_ID], t) for s, t in zip(src, tgt) if len(s) + 2 <= max_len and len(t) + 1 <= max_len]


def directions(pairs: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for p in pairs:
        a, b = p.split("-")
        out += [(a, b), (b, a)]
    return out


def make_batches(examples: list[Example], max_tokens: int, rng: random.Random) -> list[list[int]]:
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i][0]) + rng.random(), len(examples[i][1])))
    batches: list[list[int]] = []
    cur: list[int] = []
    longest = 0
    for i in order:
        n = max(len(examples[i][0]), len(examples[i][1]) + 1)
        if cur and max(longest, n) * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, longest = [], 0
        cur.append(i)
        longest = max(longest, n)
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def collate(examples: list[Example], idx: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    srcs = [examples[i][0] for i in idx]
    tgts = [examples[i][1] for i in idx]
    S, T = max(map(len, srcs)), max(map(len, tgts)) + 1
    src = torch.full((len(idx), S), PAD_ID, dtype=torch.long)
    tin = torch.full((len(idx), T), PAD_ID, dtype=torch.long)
    tout = torch.full((len(idx), T), PAD_ID, dtype=torch.long)
    for r, (s, t) in enumerate(zip(srcs, tgts)):
        src[r, : len(s)] = torch.as_tensor(s)
        tin[r, 0] = BOS_ID
        tin[r, 1 : len(t) + 1] = torch.as_tensor(t)
        tout[r, : len(t)] = torch.as_tensor(t)
        tout[r, len(t)] = EOS_ID
    return src, tin, tout


def read_corpus_pairs(path: Path, upsample: str, cap: str = "", lang: str = "fr", seed: int = 0) -> dict[str, list[Pair]]:
    """The rows (source, English, ``lang``) of the corpus as pairs by the direction they train
    ("both", "en-fr", "fr-en": a source column ``NAME>fr`` / ``NAME>en``, ``data.split_source``),
    each source cut to the rows ``cap`` allows (``corpus.rows.cap_sources`` with ``seed``), then
    repeated as ``upsample`` says."""
    times = parse_upsample(upsample)
    out: dict[str, list[Pair]] = {"both": [], f"en-{lang}": [], f"{lang}-en": []}
    for src, en, other in cap_sources(read_rows(path), parse_cap(cap), seed):
        source, direction = split_source(src, lang)
        out[direction] += [Pair(en, other)] * times.get(source, 1)
    return out


def source_pairs(path: Path, sources: set[str], lang: str = "fr") -> set[Pair]:
    """The pairs of the corpus rows whose source (without its direction) is one of ``sources``."""
    return {Pair(en, other) for src, en, other in read_rows(path) if split_source(src, lang)[0] in sources}


def corpus_pair(cfg: TrainConfig) -> str | None:
    """The pair whose training pairs come from ``cfg.corpus`` (the first of ``cfg.pairs``); None without a corpus."""
    return cfg.pairs[0] if cfg.corpus else None


def autocast(device: torch.device, amp: str):
    """bfloat16 autocast when asked (CUDA, or a CPU with native bfloat16 products); a no-op context otherwise."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp == "bf16")


def lr_at(step: int, cfg: TrainConfig) -> float:
    step = max(step, 1)
    return cfg.lr * min(step / cfg.warmup, math.sqrt(cfg.warmup / step))


# -- validation ------------------------------------------------------------------------------
@torch.no_grad()
def valid_loss(model: Transformer, examples: list[Example], max_tokens: int) -> float:
    model.eval()
    total, count = 0.0, 0
    device = next(model.parameters()).device
    for idx in make_batches(examples, max_tokens, random.Random(0)):
        src, tin, tout = (t.to(device) for t in collate(examples, idx))
        logits = model(src, tin)
        total += float(F.cross_entropy(logits.flatten(0, 1).float(), tout.flatten(), ignore_index=PAD_ID, reduction="sum"))
        count += int((tout != PAD_ID).sum())
    model.train()
    return total / count


def valid_bleu(model: Transformer, tok: Tokenizer, pairs: Sequence[Pair], src_lang: str, tgt_lang: str) -> float:
    import sacrebleu

    from rendition.model.translation.translator import Translator

    model.eval()
    tr = Translator(model, tok)
    srcs = [p.src if src_lang == "en" else p.tgt for p in pairs]
    refs = [p.tgt if src_lang == "en" else p.src for p in pairs]
    hyps = tr.translate(srcs, source=src_lang, target=tgt_lang, beam_size=1)
    model.train()
    return sacrebleu.corpus_bleu([h.text for h in hyps], [refs]).score


def curves(log_path: Path) -> list[Panel]:
    """The training and validation losses, and the validation BLEU of each direction, from the run's log."""
    rows = [json.loads(line) for line in log_path.read_text().splitlines() if line.strip()]
    tr = [r for r in rows if r["kind"] == "train"]
    ev = [r for r in rows if r["kind"] == "valid"]
    steps = [r["step"] for r in ev]
    losses = [Line([r["step"] for r in tr], [r["loss"] for r in tr], "train (smoothed CE)", style={"alpha": 0.7}),
              Line(steps, [r["valid_loss"] for r in ev], "valid CE", "o-")]  # fmt: skip
    bleu = [Line(steps, [r[k] for r in ev], k.replace("bleu_", "BLEU "), "o-") for k in sorted({k for r in ev for k in r if k.startswith("bleu_")})]
    return [Panel(losses, "step", "loss (nats/token)"), Panel(bleu, "step", "BLEU (greedy, valid subset)")]


# -- main loop -------------------------------------------------------------------------------
@dataclass
class Data:
    train: list[Example]
    valid: list[Example]
    bleu: list[tuple[str, str, list[Pair]]]  # (source language, target language, pairs) for validation BLEU
    anchored: list[bool] = field(default_factory=list)  # per training example: its loss includes the anchor's distribution


def run_tokenizer(cfg: TrainConfig, run: Path, corpus: dict[str, list[Pair]] | None, splits_dir: Path) -> Tokenizer:
    """The run's SentencePiece model, trained on the training text the first time."""
    sp_prefix = run / "sentencepiece"
    if not Path(f"{sp_prefix}.model").exists():
        texts: list[str] = []
        for lp in sorted({f"en-{x}" for x in cfg.tokenizer_langs if x != "en"}):
            ps = read_tsv(splits_dir / f"train.{lp}.tsv") if corpus is None or lp != corpus_pair(cfg) else [p for ps in corpus.values() for p in ps]
            texts += [p.src for p in ps] + [p.tgt for p in ps]
        train_tokenizer(texts, sp_prefix, cfg.vocab_size, cfg.tokenizer_langs, cfg.byte_fallback, 2_000_000)
    return Tokenizer(f"{sp_prefix}.model")


def run_model_config(cfg: TrainConfig, run: Path, model_cfg: TransformerConfig, tok: Tokenizer) -> TransformerConfig:
    """The model's shape: a resumed run keeps the one it was started with, whatever the command line says now."""
    langs = tuple(dict.fromkeys(x for p in cfg.pairs for x in p.split("-")))  # in the pairs' order: ("en", "de")
    model_cfg = replace(model_cfg, vocab_size=tok.vocab_size, languages=langs)
    if (run / "checkpoint_last.safetensors").exists() and (run / "config.json").exists():
        model_cfg = TransformerConfig.load(run / "config.json")
    model_cfg.save(run / "config.json")
    return model_cfg


def load_data(
    cfg: TrainConfig, tok: Tokenizer, corpus: dict[str, list[Pair]] | None, splits_dir: Path, unanchored: AbstractSet[Pair] = frozenset()
) -> Data:
    """Both directions of each pair: the corpus (for the first pair, when given) or the DDTP train
    split, the validation sets' first 500 pairs, and the validation pairs for BLEU.  Every training
    example is anchored (``Data.anchored``) but those of the pairs in ``unanchored``."""
    data = Data([], [], [])
    for lp in cfg.pairs:
        from_corpus = corpus is not None and lp == corpus_pair(cfg)
        tr_pairs = corpus["both"] if corpus is not None and from_corpus else read_tsv(splits_dir / f"train.{lp}.tsv")
        va_pairs = read_tsv(splits_dir / f"valid.{lp}.tsv")
        for s, t in directions([lp]):
            one_way = corpus[f"{s}-{t}"] if corpus is not None and from_corpus else []  # (rows learnt in this direction only)
            both = tr_pairs + one_way
            for keep, ps in ((True, [p for p in both if p not in unanchored]), (False, [p for p in both if p in unanchored])):
                examples = load_examples(tok, ps, s, t, cfg.max_len)
                data.train += examples
                data.anchored += [keep] * len(examples)
            for name in cfg.valid_sets.split(","):
                if name.endswith(lp):
                    data.valid += load_examples(tok, read_tsv(splits_dir / f"valid.{name}.tsv")[:500], s, t, 10_000)
            if cfg.bleu_sentences:
                data.bleu.append((s, t, va_pairs[: cfg.bleu_sentences]))
    return data


def start(cfg: TrainConfig, model_cfg: TransformerConfig, run: Path) -> tuple[Transformer, torch.optim.Adam, dict[str, Any]]:
    """The model, its optimiser and the run's counters: resumed from the last checkpoint, else
    initialised from ``cfg.init_from``'s weights or at random."""
    torch.manual_seed(cfg.seed)
    model = Transformer(model_cfg).to(torch.device(cfg.device))
    # not fused=True: the fused kernel does not bump the parameters' version counters, which the inference
    # copies of model.transformer (output projection, fused Q/K/V) use to notice a change (validation went stale)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), eps=1e-9)
    print(f"model: {model.num_parameters() / 1e6:.2f}M parameters", flush=True)
    state: dict[str, Any] = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "elapsed": 0.0, "checkpoints": []}
    last = run / "checkpoint_last.safetensors"
    if last.exists():
        ck = load_checkpoint(last)
        model.load_state_dict(ck.model)
        opt.load_state_dict(ck.optimizer)
        state = ck.meta
        print(f"resumed from step {state['step']}", flush=True)
    elif cfg.init_from:
        weights = load_file(str(Path(cfg.init_from) / "model.safetensors"))
        model.load_state_dict({k: v.float() for k, v in weights.items()})
        print(f"initialised from {cfg.init_from}", flush=True)
    return model, opt, state


def require_run_tokenizer(model_dir: Path, run: Path) -> None:
    """Refuse a model directory whose SentencePiece model is not the run's."""
    if (model_dir / "sentencepiece.model").read_bytes() != (run / "sentencepiece.model").read_bytes():
        raise ValueError(f"{model_dir} has another tokenizer than the run")


def load_anchor(cfg: TrainConfig, run: Path, model_cfg: TransformerConfig) -> Transformer:
    """The frozen anchor model (``cfg.anchor_from``): it must have the run's shape and tokenizer."""
    d = Path(cfg.anchor_from)
    if not cfg.anchor_weight >= 0.0:
        raise ValueError(f"the anchor weight must be >= 0, not {cfg.anchor_weight}")
    require_run_tokenizer(d, run)
    anchor_cfg = TransformerConfig.load(d / "config.json")
    if replace(anchor_cfg, dropout=model_cfg.dropout) != model_cfg:
        raise ValueError(f"{d} has another shape than the run")
    if model_cfg.dropout:
        # with dropout the KL is the dropout's noise (about 0.25 nats per token against a stage's drift of
        # 0.01-0.02), and pulling on it moved the model's own distribution away from the anchor's
        raise ValueError("an anchored stage trains without dropout (--dropout 0): the KL compares the model's distribution with the anchor's")
    anchor = Transformer(anchor_cfg).to(torch.device(cfg.device))
    anchor.load_state_dict({k: v.float() for k, v in load_file(str(d / "model.safetensors")).items()})
    return anchor.eval().requires_grad_(False)


@dataclass
class Session:
    """A training run in progress: what each step, validation and checkpoint reads and updates."""

    cfg: TrainConfig
    run: Path
    model: Transformer
    opt: torch.optim.Adam
    state: dict[str, Any]
    data: Data
    tok: Tokenizer
    log: IO[str]
    anchor: Transformer | None = None  # the frozen model whose distribution anchors the training rows
    tokens_seen: int = 0
    tick: float = field(default_factory=time.time)

    def step(self, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor], anchored: torch.Tensor | None = None) -> torch.Tensor:
        """One optimiser step on a batch; its loss.

        With an anchor model, the loss of each token of an anchored row (``anchored``, one flag per
        row) is ``CE(reference) + w * KL(anchor || model)`` with ``w = anchor_weight``: the model
        learns what the stage adds while its distribution on the rows it already knew stays near
        the anchor's, the model the stage started from (Li & Hoiem 2016, "Learning
        without Forgetting"; Khayrallah et al. 2018, "Regularized Training Objective for Continued
        Training for Domain Adaptation in Neural Machine Translation").  The rows of the sources in
        ``anchor_skip`` learn from their references only."""
        device = next(self.model.parameters()).device
        self.tokens_seen += int((batch[2] != PAD_ID).sum()) + int((batch[0] != PAD_ID).sum())
        src, tin, tout = (t.to(device, non_blocking=True) for t in batch)
        for g in self.opt.param_groups:
            g["lr"] = lr_at(self.state["step"] + 1, self.cfg)
        with autocast(device, self.cfg.amp):
            logits = self.model(src, tin)  # (B, T, V)
        real = tout != PAD_ID  # (B, T)
        ce = F.cross_entropy(logits.flatten(0, 1).float(), tout.flatten(), ignore_index=PAD_ID, label_smoothing=self.cfg.label_smoothing, reduction="none")
        total = ce.sum()
        if self.anchor is not None and anchored is not None and bool(anchored.any()):
            rows = anchored.to(device)
            with torch.no_grad(), autocast(device, self.cfg.amp):
                anchor_logits = self.anchor(src[rows], tin[rows])
            kl = F.kl_div(logits[rows].float().log_softmax(-1), anchor_logits.float().log_softmax(-1), log_target=True, reduction="none").sum(-1)  # (b, T)
            w, mask = self.cfg.anchor_weight, real[rows]
            total = total + w * (kl * mask).sum()
        loss = total / real.sum()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm)
        self.opt.step()
        return loss

    def write(self, row: dict[str, Any]) -> None:
        self.log.write(json.dumps(row) + "\n")
        self.log.flush()

    def log_training(self, loss: float, bar: tqdm) -> None:
        step = self.state["step"]
        tps = self.tokens_seen / (time.time() - self.tick)
        self.tokens_seen, self.tick = 0, time.time()
        bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{tps:.0f}", lr=f"{lr_at(step, self.cfg):.2e}")
        self.write({"kind": "train", "step": step, "loss": loss, "tok_s": tps, "t": self.state["elapsed"]})

    def validate(self) -> None:
        """Validation loss and each direction's greedy BLEU, logged."""
        device = next(self.model.parameters()).device
        with autocast(device, self.cfg.amp):
            vl = valid_loss(self.model, self.data.valid, self.cfg.max_tokens)
        row = {"kind": "valid", "step": self.state["step"], "t": self.state["elapsed"], "valid_loss": vl}
        for s, t, ps in self.data.bleu:
            row[f"bleu_{s}-{t}"] = valid_bleu(self.model, self.tok, ps, s, t)
        tqdm.write(json.dumps(row))
        self.write(row)

    def save(self) -> None:
        """A numbered checkpoint (the last ``keep_checkpoints`` are kept, for averaging) and the last one, to resume from."""
        ck = self.run / f"checkpoint_{self.state['step']}.safetensors"
        save_checkpoint(ck, self.model, self.opt, dict(self.state))
        self.state["checkpoints"] = [*self.state["checkpoints"], ck.name][-self.cfg.keep_checkpoints :]
        for old in self.run.glob("checkpoint_[0-9]*.safetensors"):
            if old.name not in self.state["checkpoints"]:
                old.unlink()
        save_checkpoint(self.run / "checkpoint_last.safetensors", self.model, self.opt, dict(self.state))


def run_steps(session: Session) -> None:
    """Train until ``max_steps`` or ``max_minutes`` (counted over resumed runs), validating every
    ``eval_every`` and saving every ``save_every`` steps and at the end; epochs resume mid-way."""
    cfg, state = session.cfg, session.state
    session.model.train()
    t0 = time.time() - state["elapsed"]
    bar = tqdm(total=cfg.max_steps, initial=state["step"], desc="train", unit="step", mininterval=5)
    while True:
        batches = make_batches(session.data.train, cfg.max_tokens, random.Random(cfg.seed + state["epoch"]))
        for bi in range(state["batch_in_epoch"], len(batches)):
            idx = batches[bi]
            anchored = torch.tensor([session.data.anchored[i] for i in idx]) if session.anchor is not None else None
            loss = session.step(collate(session.data.train, idx), anchored)
            step = state["step"] + 1
            state.update(step=step, batch_in_epoch=bi + 1, elapsed=time.time() - t0)
            bar.update(1)
            if step % 50 == 0:
                session.log_training(loss.item(), bar)
            out_of_time = state["elapsed"] > cfg.max_minutes * 60 or step >= cfg.max_steps
            if step % cfg.eval_every == 0 or out_of_time:
                session.validate()
            if step % cfg.save_every == 0 or out_of_time:
                session.save()
            if out_of_time:
                bar.close()
                return
        state.update(epoch=state["epoch"] + 1, batch_in_epoch=0)


def train(cfg: TrainConfig, model_cfg: TransformerConfig, splits_dir: Path = SPLITS_DIR) -> Path:
    torch.set_num_threads(cfg.threads)
    run = Path(cfg.run_dir)
    run.mkdir(parents=True, exist_ok=True)
    (run / "train_config.json").write_text(json.dumps(asdict(cfg), indent=2))
    lang = cfg.pairs[0].split("-")[1]
    corpus = read_corpus_pairs(Path(cfg.corpus), cfg.upsample, cfg.cap, lang, cfg.seed) if cfg.corpus else None
    tok = run_tokenizer(cfg, run, corpus, splits_dir)
    model_cfg = run_model_config(cfg, run, model_cfg, tok)
    anchor = load_anchor(cfg, run, model_cfg) if cfg.anchor_from else None  # (refused before the data's minutes of loading)
    skip = {x for x in cfg.anchor_skip.split(",") if x}
    data = load_data(cfg, tok, corpus, splits_dir, source_pairs(Path(cfg.corpus), skip, lang) if cfg.corpus and skip else frozenset())
    print(f"{len(data.train)} training examples, {len(data.valid)} validation examples", flush=True)
    model, opt, state = start(cfg, model_cfg, run)
    if anchor is not None:
        print(f"anchored to {cfg.anchor_from}: {sum(data.anchored)} of {len(data.train)} examples, weight {cfg.anchor_weight}", flush=True)
    with (run / "log.jsonl").open("a") as log:
        run_steps(Session(cfg, run, model, opt, state, data, tok, log, anchor))
    plot_curves(run / "curves.png", curves(run / "log.jsonl"), f"translator {'+'.join(cfg.pairs)}")
    return run


def export(
    run_dir: Path, out_dir: Path, last_n: int | None = None, dtype: torch.dtype = torch.float16, blend: tuple[Path, float] | None = None
) -> Path:
    """Average the last ``last_n`` kept checkpoints (all kept ones when None) and write
    config.json + model.safetensors + sentencepiece.model.  ``blend=(model_dir, w)``: the weights
    written are ``(1 - w) * average + w * model_dir's`` -- interpolation in weight space toward the
    model a fine-tuning stage started from, which gives back part of what the stage cost on the
    data it did not stress (Wortsman et al. 2022, "Robust fine-tuning of zero-shot models");
    ``model_dir`` must have the run's shape and tokenizer."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    cks = sorted(run_dir.glob("checkpoint_[0-9]*.safetensors"), key=lambda p: int(p.stem.split("_")[1]))
    if last_n is not None:
        cks = cks[-last_n:]
    weights = average_checkpoints(cks)
    if blend is not None:
        other_dir, w = Path(blend[0]), float(blend[1])
        if not 0.0 <= w <= 1.0:
            raise ValueError(f"the blend weight must be in [0, 1], not {w}")
        require_run_tokenizer(other_dir, run_dir)
        other = load_file(str(other_dir / "model.safetensors"))
        if other.keys() != weights.keys() or any(other[k].shape != v.shape for k, v in weights.items()):
            raise ValueError(f"{other_dir} has another shape than the run")
        weights = {k: (1 - w) * v + w * other[k].float() for k, v in weights.items()}
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file({k: v.to(dtype).contiguous() for k, v in weights.items()}, str(out_dir / "model.safetensors"))
    shutil.copy(run_dir / "config.json", out_dir / "config.json")
    shutil.copy(run_dir / "sentencepiece.model", out_dir / "sentencepiece.model")
    return out_dir


def main(argv: Sequence[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="rendition train", description="train the translator")
    for f in TrainConfig.__dataclass_fields__.values():
        if f.type in ("int", "float", "str"):
            ap.add_argument(f"--{f.name.replace('_', '-')}", type=eval(f.type), default=f.default)
    ap.add_argument("--pairs", nargs="+", default=list(TrainConfig.pairs))
    ap.add_argument("--byte-fallback", action="store_true", help="tokenizer: unknown characters as byte pieces")
    for f in TransformerConfig.__dataclass_fields__.values():
        if f.name in ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "max_relative_position"):
            ap.add_argument(f"--{f.name.replace('_', '-')}", type=int, default=f.default)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--absolute", action="store_true", help="sinusoidal absolute positions, no relative tables")
    ap.add_argument("--keys-only", action="store_true", help="relative keys only (no w^V)")
    ap.add_argument("--model-config", type=Path, help="the model's shape from this config.json (the shape options above are then ignored)")
    ap.add_argument("--export", type=Path, help="after training, average checkpoints and export here")
    a = ap.parse_args(argv)
    cfg = TrainConfig(
        **{k: getattr(a, k) for k in TrainConfig.__dataclass_fields__ if hasattr(a, k) and k not in ("pairs", "byte_fallback")},
        pairs=tuple(a.pairs),
        byte_fallback=a.byte_fallback,
    )
    mcfg = TransformerConfig(
        vocab_size=cfg.vocab_size,
        d_model=a.d_model,
        n_heads=a.n_heads,
        d_ff=a.d_ff,
        n_encoder_layers=a.n_encoder_layers,
        n_decoder_layers=a.n_decoder_layers,
        max_relative_position=a.max_relative_position,
        relative_positions=not a.absolute,
        sinusoidal_positions=a.absolute,
        relative_values=not a.keys_only,
        dropout=a.dropout,
    )
    if a.model_config:
        mcfg = TransformerConfig.load(a.model_config)
    run = train(cfg, mcfg)
    if a.export:
        export(run, a.export)


if __name__ == "__main__":
    main()
