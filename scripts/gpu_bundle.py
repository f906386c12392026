"""Weights in and out of a lent GPU machine, whose transfers are capped (64 MiB each way, files of
at most 16 MiB coming back).

    python scripts/gpu_bundle.py pack MODEL_DIR OUT.safetensors     # matrices to int8 (per row), rest as is
    python scripts/gpu_bundle.py unpack IN.safetensors MODEL_DIR    # back to the original dtypes
    python scripts/gpu_bundle.py average RUN_DIR OUT_DIR [--last N] # the run's checkpoints from its last half
    python scripts/gpu_bundle.py bundle PAIR CORPUS OUT_DIR --cap dict=N  # a run from scratch: corpus, tokenizer, config
    python scripts/gpu_bundle.py transplant MODEL_DIR BUNDLE_DIR  # MODEL_DIR's body as the bundle's start
    python scripts/gpu_bundle.py mix CORPUS TOKENIZER --cap ... --upsample ...  # each source's share of an epoch

``pack`` halves a float16 model: every matrix of at least 4,096 entries is stored as int8 with one
float32 scale per row (symmetric, round to nearest), everything else unchanged.  It is meant for a
training run's starting weights, where a relative error of about 0.5% per weight is gone after the
first steps, not for weights that are shipped.  ``average`` exports (float16, as ``rendition train
--export``) the mean of the kept checkpoints whose step is at least half the run's last step, at
most ``--last`` of them, so that a run cut short by its time limit is not averaged with its start.

``bundle`` prepares a run from scratch for another pair (``en-de``): the corpus as xz, a
SentencePiece model trained on both sides of the corpus as the cap leaves it (the shipped
translator's settings: unigram, byte fallback, the two languages' tags), and ``config.json``, the
shipped translator's shape with that vocabulary and the pair's languages.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

MIN_QUANTISED = 4096
ROOT = Path(__file__).resolve().parents[1]
SHIPPED_CONFIG = ROOT / "model" / "pretrained" / "translator" / "config.json"
BUNDLE_FILES = ("corpus.tsv.xz", "sentencepiece.model", "config.json")


def pack(model_dir: Path, out: Path) -> None:
    pack_tensors(load_file(str(Path(model_dir) / "model.safetensors")), out)


def pack_tensors(tensors: dict[str, torch.Tensor], out: Path) -> None:
    packed: dict[str, torch.Tensor] = {}
    dtypes: dict[str, str] = {}
    for name, t in tensors.items():
        dtypes[name] = str(t.dtype).removeprefix("torch.")
        if t.is_floating_point() and t.dim() == 2 and t.numel() >= MIN_QUANTISED:
            w = t.float()
            scale = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 127.0
            packed[f"{name}.q"] = torch.round(w / scale).clamp(-127, 127).to(torch.int8).contiguous()
            packed[f"{name}.scale"] = scale.contiguous()
        else:
            packed[name] = t.contiguous()
    save_file(packed, str(out), metadata={"dtypes": json.dumps(dtypes)})


def unpack(packed_path: Path, model_dir: Path) -> None:
    with safe_open(str(packed_path), "pt") as f:
        dtypes = json.loads(f.metadata()["dtypes"])
    packed = load_file(str(packed_path))
    out = {}
    for name, dtype in dtypes.items():
        if f"{name}.q" in packed:
            out[name] = (packed[f"{name}.q"].float() * packed[f"{name}.scale"]).to(getattr(torch, dtype))
        else:
            out[name] = packed[name]
    Path(model_dir).mkdir(parents=True, exist_ok=True)
    save_file(out, str(Path(model_dir) / "model.safetensors"))


def average(run_dir: Path, out_dir: Path, last: int, blend: tuple[Path, float] | None = None) -> list[str]:
    """The newest ``last`` checkpoints of the run's second half, averaged (``blend``: then
    interpolated with another translator's weights, ``rendition.model.training.train.export``)."""
    from rendition.model.training.train import export

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    steps = sorted(int(p.stem.split("_")[1]) for p in run_dir.glob("checkpoint_[0-9]*.safetensors"))
    if not steps:
        raise SystemExit(f"no checkpoints in {run_dir}")
    chosen = [s for s in steps if s >= steps[-1] / 2][-last:]  # the newest ones: rendition train's export of the last n
    export(run_dir, out_dir, last_n=len(chosen), blend=blend)
    blended = {"blend": [str(blend[0]), blend[1]]} if blend else {}
    (out_dir / "averaged.json").write_text(json.dumps({"steps": chosen, **blended}) + "\n")
    return [str(s) for s in chosen]


def bundle(pair: str, corpus: Path, out_dir: Path, cap: str = "", vocab_size: int = 16_000,
           input_sentences: int = 1_500_000, shape: Path = SHIPPED_CONFIG) -> list[Path]:
    """``out_dir``'s BUNDLE_FILES for a run from scratch on ``pair``'s ``corpus``; their paths."""
    from rendition.model.tokenizer import train_tokenizer
    from rendition.model.training.train import TrainConfig, read_corpus_pairs
    from rendition.model.translation.transformer import TransformerConfig

    lang = pair.split("-")[1]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # (the rows the training reads: the same cap, the same seed)
    pairs = [p for ps in read_corpus_pairs(Path(corpus), "", cap, lang, TrainConfig.seed).values() for p in ps]
    texts = (text for p in pairs for text in (p.src, p.tgt))
    tok = train_tokenizer(texts, out_dir / "sentencepiece", vocab_size, ("en", lang), byte_fallback=True, input_sentences=input_sentences)
    (out_dir / "sentencepiece.vocab").unlink(missing_ok=True)
    replace(TransformerConfig.load(shape), vocab_size=tok.vocab_size, languages=("en", lang)).save(out_dir / "config.json")
    with (out_dir / "corpus.tsv.xz").open("wb") as xz:
        subprocess.run(["xz", "-z", "-c", "-T2", "-9", str(corpus)], stdout=xz, check=True)
    return [out_dir / name for name in BUNDLE_FILES]


def transplant(model_dir: Path, bundle_dir: Path, seed: int = 1) -> int:
    """``bundle_dir``/init.i8.safetensors (packed): the translator in ``model_dir`` under the
    bundle's tokenizer and config: every tensor but ``embed.weight`` as it is; the embedding rows of
    the pieces both tokenizers have copied, the others as a fresh model's (``seed``).  Returns the
    number of rows copied."""
    from rendition.model.tokenizer import Tokenizer
    from rendition.model.translation.transformer import Transformer, TransformerConfig

    model_dir, bundle_dir = Path(model_dir), Path(bundle_dir)
    torch.manual_seed(seed)
    fresh = Transformer(TransformerConfig.load(bundle_dir / "config.json")).state_dict()
    old = load_file(str(model_dir / "model.safetensors"))
    old_rows = {piece: i for i, piece in enumerate(Tokenizer(model_dir / "sentencepiece.model").pieces())}
    pairs = [(i, old_rows[p]) for i, p in enumerate(Tokenizer(bundle_dir / "sentencepiece.model").pieces()) if p in old_rows]
    weights = {name: old[name] if name != "embed.weight" else t.to(old[name].dtype) for name, t in fresh.items()}
    new_idx, old_idx = (torch.tensor(x) for x in zip(*pairs))
    weights["embed.weight"][new_idx] = old["embed.weight"][old_idx]
    pack_tensors(weights, bundle_dir / "init.i8.safetensors")
    return len(pairs)


def mix(corpus: Path, tokenizer: Path, cap: str, upsample: str) -> dict[str, tuple[int, int]]:
    """Each source's rows and tokens (both sides, ``tokenizer``'s pieces) in one epoch of
    ``rendition train --cap CAP --upsample UPSAMPLE`` on ``corpus``, with the same seed."""
    from rendition.model.tokenizer import Tokenizer
    from rendition.model.training.corpus.rows import cap_sources, read_rows
    from rendition.model.training.data import parse_cap, parse_upsample
    from rendition.model.training.train import TrainConfig

    rows = cap_sources(read_rows(Path(corpus)), parse_cap(cap), TrainConfig.seed)
    times = parse_upsample(upsample)
    lengths = [len(ids) for ids in Tokenizer(tokenizer).encode([t for _, e, x in rows for t in (e, x)])]
    out: dict[str, tuple[int, int]] = {}
    for i, (src, _, _) in enumerate(rows):
        name = src.partition(">")[0]
        n, tokens = out.get(name, (0, 0))
        out[name] = (n + times.get(name, 1), tokens + times.get(name, 1) * (lengths[2 * i] + lengths[2 * i + 1]))
    return out


def _command(sub: argparse._SubParsersAction, name: str, *args: str) -> argparse.ArgumentParser:
    """The subcommand ``name`` with the positional ``args``, paths but for ``pair``."""
    cmd = sub.add_parser(name)
    for arg in args:
        if arg == "pair":
            cmd.add_argument(arg, choices=["en-de"])
        else:
            cmd.add_argument(arg, type=Path)
    return cmd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    _command(sub, "pack", "model_dir", "out")
    _command(sub, "unpack", "packed", "model_dir")
    avg = _command(sub, "average", "run_dir", "out_dir")
    avg.add_argument("--last", type=int, default=6)
    avg.add_argument("--blend", nargs=2, metavar=("MODEL_DIR", "WEIGHT"),
                     help="(1 - WEIGHT) x the average + WEIGHT x MODEL_DIR's weights (the model the stage started from)")  # fmt: skip
    b = _command(sub, "bundle", "pair", "corpus", "out_dir")
    b.add_argument("--cap", default="", help="as rendition train --cap: the tokenizer learns from the rows the training reads")
    b.add_argument("--vocab-size", type=int, default=16_000)
    _command(sub, "transplant", "model_dir", "bundle_dir")
    m = _command(sub, "mix", "corpus", "tokenizer")
    m.add_argument("--cap", default="")
    m.add_argument("--upsample", default="")
    args = ap.parse_args()
    if args.cmd == "pack":
        pack(args.model_dir, args.out)
    elif args.cmd == "unpack":
        unpack(args.packed, args.model_dir)
    elif args.cmd == "average":
        blend = (Path(args.blend[0]), float(args.blend[1])) if args.blend else None
        print("averaged checkpoints:", ", ".join(average(args.run_dir, args.out_dir, args.last, blend)))
    elif args.cmd == "transplant":
        print(f"{transplant(args.model_dir, args.bundle_dir)} embedding rows copied")
    elif args.cmd == "mix":
        shares = mix(args.corpus, args.tokenizer, args.cap, args.upsample)
        rows, tokens = (sum(v[k] for v in shares.values()) for k in (0, 1))
        print("source rows (share) tokens (share)")
        for name, (n, t) in sorted(shares.items(), key=lambda kv: -kv[1][1]):
            print(f"{name} {n:,} ({n / rows:.1%}) {t:,} ({t / tokens:.1%})")
        print(f"all {rows:,} {tokens:,}")
    else:
        for path in bundle(args.pair, args.corpus, args.out_dir, args.cap, args.vocab_size):
            print(f"{path}: {path.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
