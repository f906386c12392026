"""DiSAN sentence encoder vs all-MiniLM-L6-v2 (sentence-transformers): throughput and peak memory.

Same sentences, same CPU, same thread count, one run.  Throughput is reported both as wall-clock
sentences/s and as sentences per CPU-second of this process (the second is the fairer number on a
shared machine, where the wall clock also measures other people's jobs).  Peak memory of one
batch of 32 sentences x 512 tokens is measured in a fresh subprocess per implementation (peak RSS
minus RSS after loading).

    python benchmarks/bench_disan.py --threads 1 --sentences 512
    python benchmarks/bench_disan.py --threads 1 --widths 128 192 256 320 --general   # width/speed trade-off
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from rendition.model.embedding.disan import DiSAN, DiSANConfig  # noqa: E402
from rendition.model.embedding.encoder import DEFAULT_ENCODER, SentenceEncoder  # noqa: E402
from rendition.model.tokenizer import Tokenizer  # noqa: E402
from rendition.model.training.data import SPLITS_DIR, read_tsv  # noqa: E402


def load_encoder(d_model: int | None) -> SentenceEncoder:
    if d_model is None and (DEFAULT_ENCODER / "model.safetensors").is_file():
        return SentenceEncoder.from_pretrained(device="cpu")
    tok = Tokenizer(ROOT / "model" / "pretrained" / "translator" / "sentencepiece.model")
    d = d_model or 192
    return SentenceEncoder(DiSAN(DiSANConfig(vocab_size=tok.vocab_size, d_model=d, d_embed=d, d_out=384)), tok)


def sentences(n: int, min_words: int, max_words: int) -> list[str]:
    out: list[str] = []
    for split in ("test", "valid"):
        for lang in ("fr", "de"):
            out += [p.src for p in read_tsv(SPLITS_DIR / f"{split}.en-{lang}.tsv") if min_words <= len(p.src.split()) <= max_words]
    out = sorted(set(out))
    reps = (n + len(out) - 1) // max(1, len(out))
    return (out * reps)[:n]


def timed(fn, n_sent: int, min_seconds: float) -> tuple[float, float]:
    fn()  # warm-up (kernel build, allocator)
    c0, w0, runs = time.process_time(), time.perf_counter(), 0
    while True:
        fn()
        runs += 1
        if time.perf_counter() - w0 >= min_seconds:
            break
    return runs * n_sent / (time.perf_counter() - w0), runs * n_sent / max(1e-9, time.process_time() - c0)


def status_mb(field: str) -> float:
    """VmRSS (now) or VmHWM (peak) of this process; VmHWM, unlike ru_maxrss, is not inherited on exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def memory_child(impl: str, batch: int, tokens: int, d_model: int | None) -> None:
    """Runs in a subprocess: RSS after load, peak RSS after one (batch x tokens) forward pass."""
    torch.set_num_threads(1)
    enc = load_encoder(d_model)
    ids = torch.randint(4, enc.tokenizer.vocab_size, (batch, tokens))
    fast = impl != "direct"
    with torch.inference_mode():
        enc.model(ids[:1, :8], fast=fast, impl=impl if fast else "auto")
    base = status_mb("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset the peak to the current RSS
    except OSError:
        pass
    with torch.inference_mode():
        out = enc.model(ids, fast=fast, impl=impl if fast else "auto")
    peak = status_mb("VmHWM")
    print(json.dumps({"impl": impl, "base_mb": base, "peak_mb": peak, "delta_mb": peak - base, "finite": bool(torch.isfinite(out).all())}))


def memory(impl: str, batch: int, tokens: int, d_model: int | None) -> dict:
    cmd = [sys.executable, __file__, "--memory-child", impl, "--mem-batch", str(batch), "--mem-tokens", str(tokens)]
    if d_model:
        cmd += ["--d-model", str(d_model)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        return {"impl": impl, "error": res.stderr.strip().splitlines()[-1] if res.stderr.strip() else f"exit {res.returncode}"}
    return json.loads(res.stdout.strip().splitlines()[-1])


def width_sweep(args: argparse.Namespace) -> None:
    """sent/s of MiniLM and of DiSANs of several widths (d_embed = d_model, head to 384), same sentences."""
    from rendition.model.training.distill import load_teacher
    from rendition.model.training.distill_data import general_held_out

    sents = general_held_out("test")[: args.sentences] if args.general else sentences(args.sentences, 15, 25)
    teacher = load_teacher()
    wall, cpu = timed(lambda: teacher.encode(sents, batch_size=args.batch_size), len(sents), args.seconds)
    print(f"{'model':<36} {'params':>10} {'sent/s wall':>12} {'x MiniLM':>9} {'sent/CPU-s':>11} {'x MiniLM':>9}")
    print(f"{'all-MiniLM-L6-v2':<36} {'22.7M':>10} {wall:>12.1f} {1.0:>9.2f} {cpu:>11.1f} {1.0:>9.2f}", flush=True)
    for d in args.widths:
        enc = load_encoder(d)
        w, c = timed(lambda e=enc: e.encode(sents, batch_size=args.batch_size, truncate=True), len(sents), args.seconds)
        name = f"DiSAN d={d}"
        print(f"{name:<36} {enc.model.num_parameters():>10,} {w:>12.1f} {w / wall:>9.2f} {c:>11.1f} {c / cpu:>9.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sentences", type=int, default=512, help="sentences per timed pass (~20 words each)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0, help="minimum wall time per measurement")
    ap.add_argument("--d-model", type=int, default=None, help="random DiSAN of this size instead of the shipped model")
    ap.add_argument("--skip-direct", action="store_true", help="skip the slow direct-form DiSAN")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--mem-batch", type=int, default=32)
    ap.add_argument("--mem-tokens", type=int, default=512)
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    ap.add_argument(
        "--widths", type=int, nargs="*", default=None, help="width/speed trade-off: the C kernel at these d_model (random weights)"
    )
    ap.add_argument("--general", action="store_true", help="time held-out general-English sentences (all lengths) instead")
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.mem_batch, args.mem_tokens, args.d_model)
        return
    torch.set_num_threads(args.threads)
    if args.widths:
        width_sweep(args)
        return

    enc = load_encoder(args.d_model)
    from rendition.model.training.distill import load_teacher

    teacher = load_teacher()
    sents = sentences(args.sentences, 15, 25)
    n_tok = sum(enc.count_tokens(sents)) / len(sents)
    n_wp = sum(len(teacher.tokenizer(s)["input_ids"]) for s in sents[:200]) / min(200, len(sents))
    cfg = enc.model.cfg
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, torch {torch.__version__}, threads {args.threads}")
    print(f"sentences: {len(sents)} DDTP English, 15-25 words; mean {n_tok:.1f} SentencePiece tokens, {n_wp:.1f} WordPiece tokens")
    print(f"DiSAN: d_model {cfg.d_model}, d_embed {cfg.d_embed}, out {cfg.dim}, {enc.model.num_parameters():,} parameters\n")

    def disan(impl: str, fast: bool = True):
        def run():
            seqs = enc.tokenize(sents)
            with torch.inference_mode():
                for idx in enc.buckets([len(s) for s in seqs], args.batch_size):
                    enc.model(enc.pad([seqs[i] for i in idx]), fast=fast, impl=impl)

        return run

    rows: list[tuple[str, float, float]] = []
    candidates = [
        ("all-MiniLM-L6-v2 (sentence-transformers)", lambda: teacher.encode(sents, batch_size=args.batch_size)),
        ("DiSAN fast: C kernel (SentenceEncoder.encode)", lambda: enc.encode(sents, batch_size=args.batch_size)),
        ("DiSAN fast: eager tiles (no compiler)", disan("eager")),
    ]
    if not args.skip_direct:
        candidates.append(("DiSAN direct (B, n, n, d) form", disan("auto", fast=False)))
    for name, fn in candidates:
        wall, cpu = timed(fn, len(sents), args.seconds)
        rows.append((name, wall, cpu))
        print(f"  measured {name}: {wall:.1f}/s wall, {cpu:.1f}/s per CPU-second", flush=True)
    base_wall, base_cpu = rows[0][1], rows[0][2]
    print(f"\n{'implementation':<48} {'sent/s wall':>12} {'x MiniLM':>9} {'sent/CPU-s':>11} {'x MiniLM':>9}")
    for name, wall, cpu in rows:
        print(f"{name:<48} {wall:>12.1f} {wall / base_wall:>9.2f} {cpu:>11.1f} {cpu / base_cpu:>9.2f}")

    if not args.skip_memory:
        b, n = args.mem_batch, args.mem_tokens
        direct_gb = b * n * n * cfg.d_model * 4 / 2**30
        print(f"\npeak memory, one batch of {b} x {n} tokens (fresh process, 1 thread):")
        print(f"  direct form would hold (B, n, n, d) float32 tensors of {direct_gb:.1f} GB each (several at once): not run")
        print(f"{'implementation':<24} {'RSS after load MB':>18} {'peak RSS MB':>12} {'peak - load MB':>15}")
        for impl in ("kernel", "eager"):
            r = memory(impl, b, n, args.d_model)
            if "error" in r:
                print(f"{impl:<24} error: {r['error']}")
            else:
                print(f"{impl:<24} {r['base_mb']:>18.0f} {r['peak_mb']:>12.0f} {r['delta_mb']:>15.0f}")


if __name__ == "__main__":
    main()
