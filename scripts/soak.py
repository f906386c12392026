"""Soak test: steady closed-loop load on a real server for minutes; latency and RSS over time.

Starts ``python -m rendition.service.main`` on a free loopback port (or targets ``--url`` with ``--pid``),
drives it with ``scripts/loadgen.py`` at a fixed concurrency, and every ``--interval`` seconds
records the p50/p99 latency of the requests completed in that window, the error count and the
server's resident set size (``VmRSS`` from ``/proc/<pid>/status``).  After a warm-up (the first
``--warmup`` seconds: allocator pools, torch caches and histograms settle) the RSS may not grow by
more than ``--max-rss-growth`` (10%) and no request may fail.  Writes a JSON report and a PNG plot.

    python scripts/soak.py --minutes 10 --png docs/soak.png --json soak.json     # random tiny models
    python scripts/soak.py --minutes 10 --shipped                                # the shipped models

By default the server serves small random models (written to a temp directory), so the soak
measures the service (batcher, HTTP stack, metrics, logging) rather than the model's speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadgen import Record, percentile, run_load, translate_body  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPM = ROOT / "model" / "pretrained" / "translator" / "sentencepiece.model"


def write_random_models(root: Path, seed: int = 0) -> dict[str, Path]:
    """A random en<->fr translator and a random DiSAN encoder, saved like the shipped models
    (same sizes as tests/service/conftest.py)."""
    import torch
    from safetensors.torch import save_file

    from rendition.model.embedding.disan import DiSAN, DiSANConfig
    from rendition.model.tokenizer import Tokenizer
    from rendition.model.translation.transformer import Transformer, TransformerConfig

    tok = Tokenizer(SPM)
    torch.manual_seed(seed)
    tcfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1,
                             n_decoder_layers=1, languages=("en", "fr"))
    ecfg = DiSANConfig(vocab_size=tok.vocab_size, d_embed=32, d_model=32, d_out=48, max_length=64)
    out = {}
    for name, cfg, model in (("translator", tcfg, Transformer(tcfg)), ("encoder", ecfg, DiSAN(ecfg))):
        d = root / name
        d.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(d / "model.safetensors"))
        cfg.save(d / "config.json")
        shutil.copy(SPM, d / "sentencepiece.model")
        out[name] = d
    return out


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(env_overrides: dict[str, str], log_path: Path, timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """``python -m rendition.service.main`` on a free port; returns (process, url) once /health/ready is 200."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENDITION_")}
    env.update(OMP_NUM_THREADS="1", RENDITION_TORCH_THREADS="1", RENDITION_DISAN_COMPILE="0")
    env.update(env_overrides)
    log = open(log_path, "wb")
    proc = subprocess.Popen([sys.executable, "-m", "rendition.service.main", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/health/ready", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise TimeoutError(f"server not ready in {timeout} s")


async def soak(url: str, pid: int, *, seconds: float, concurrency: int, interval: float, warmup: float,
               body=translate_body) -> dict:
    """Closed-loop load for ``seconds``; one sample per ``interval``; the report as a dict."""
    sink: list[Record] = []
    samples: list[dict] = []
    done = asyncio.Event()

    async def sampler() -> None:
        seen, t0 = 0, time.perf_counter()
        while not done.is_set():
            try:
                await asyncio.wait_for(done.wait(), timeout=interval)
            except asyncio.TimeoutError:
                pass
            window, seen = sink[seen:], len(sink)
            lat = [r.latency for r in window if r.status == 200]
            samples.append({
                "t": round(time.perf_counter() - t0, 2),
                "requests": len(window),
                "errors": sum(1 for r in window if r.status != 200),
                "p50_ms": round(percentile(lat, 50) * 1000, 2) if lat else None,
                "p99_ms": round(percentile(lat, 99) * 1000, 2) if lat else None,
                "rss_mb": round(rss_bytes(pid) / 2**20, 2),
            })

    task = asyncio.create_task(sampler())
    result = await run_load(url, body=body, concurrency=concurrency, seconds=seconds, sink=sink)
    done.set()
    await task
    ok = [r.latency for r in result.records if r.status == 200]
    errors = [r for r in result.records if r.status != 200]
    after = [s for s in samples if s["t"] >= warmup]
    base = after[0]["rss_mb"] if after else samples[-1]["rss_mb"]
    return {
        "seconds": round(result.seconds, 1),
        "concurrency": concurrency,
        "requests": len(result.records),
        "throughput_per_s": round(len(result.records) / result.seconds, 1),
        "errors": len(errors),
        "error_examples": sorted({f"{r.status} {r.error}" for r in errors})[:5],
        "p50_ms": round(percentile(ok, 50) * 1000, 1),
        "p99_ms": round(percentile(ok, 99) * 1000, 1),
        "warmup_s": warmup,
        "rss_start_mb": samples[0]["rss_mb"],
        "rss_after_warmup_mb": base,
        "rss_end_mb": samples[-1]["rss_mb"],
        "rss_max_after_warmup_mb": max(s["rss_mb"] for s in after) if after else None,
        "rss_growth_after_warmup": round((samples[-1]["rss_mb"] - base) / base, 4),
        "samples": samples,
    }


def plot(report: dict, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = report["samples"]
    t = [x["t"] / 60 for x in s]
    fig, (a, b) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    a.plot(t, [x["p50_ms"] for x in s], label="p50")
    a.plot(t, [x["p99_ms"] for x in s], label="p99")
    a.set_ylabel("latency (ms)")
    a.legend()
    a.set_title(title)
    b.plot(t, [x["rss_mb"] for x in s], color="C2")
    b.axvline(report["warmup_s"] / 60, color="grey", ls="--", lw=1, label="end of warm-up")
    b.axhline(report["rss_after_warmup_mb"] * 1.1, color="C3", ls=":", lw=1, label="+10% of post-warm-up RSS")
    b.set_ylabel("server RSS (MiB)")
    b.set_xlabel("minutes")
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--interval", type=float, default=5.0, help="seconds per sample")
    ap.add_argument("--warmup", type=float, default=None, help="seconds (default: 10%% of the run, at least 10)")
    ap.add_argument("--max-rss-growth", type=float, default=0.10)
    ap.add_argument("--url", default=None, help="soak a running server (needs --pid for RSS)")
    ap.add_argument("--pid", type=int, default=None)
    ap.add_argument("--shipped", action="store_true", help="serve the shipped models instead of random tiny ones")
    ap.add_argument("--json", default=None)
    ap.add_argument("--png", default=None)
    args = ap.parse_args(argv)
    seconds = args.minutes * 60
    warmup = args.warmup if args.warmup is not None else max(10.0, 0.1 * seconds)
    tmp = Path(tempfile.mkdtemp(prefix="soak-"))
    proc = None
    try:
        if args.url:
            url, pid = args.url, args.pid
        else:
            env = {"RENDITION_DEFAULT_MAX_LENGTH": "16", "RENDITION_DEFAULT_BEAM_SIZE": "2"}
            if not args.shipped:
                dirs = write_random_models(tmp)
                env.update(RENDITION_TRANSLATOR_PATH=str(dirs["translator"]), RENDITION_ENCODER_PATH=str(dirs["encoder"]))
            proc, url = start_server(env, tmp / "server.log")
            pid = proc.pid
        report = asyncio.run(soak(url, pid, seconds=seconds, concurrency=args.concurrency, interval=args.interval, warmup=warmup))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    for k, v in report.items():
        if k != "samples":
            print(f"{k:<26} {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    if args.png:
        plot(report, Path(args.png), f"soak: {args.minutes:g} min, concurrency {args.concurrency}, {report['requests']} requests")
    passed = report["errors"] == 0 and report["rss_growth_after_warmup"] < args.max_rss_growth
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
