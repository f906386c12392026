"""Resident memory against sentences served: the translator library, the service and CTranslate2
over every committed test split in both directions, at batch sizes 1-64 (and embeddings).

The workload: every ``data/splits/test.*en-fr.tsv`` pair, English->French and French->English,
shuffled (seed 0) and cut into batches of 1 to 64 sentences (sizes drawn with the same seed), beam 4.
Each run is a fresh process; every ``--every`` sentences it records its anonymous resident memory
(RssAnon of /proc/<pid>/status: the heap, without the libraries' code paged in from files):

* ``library``: ``Translator.from_pretrained(compute_type="int8")`` on ``--threads`` threads,
  ``translate`` per batch;
* ``service``: ``rendition.service.main`` with the shipped models and its defaults
  (``RENDITION_TORCH_THREADS`` = ``--threads``), four requests in flight to ``/v1/translate``,
  and every fourth batch also sent to ``/v1/embeddings``; the server's memory is read;
* ``ct2``: CTranslate2 int8 on the same weights (``export_ct2``), ``inter_threads`` 2 x
  ``intra_threads`` 1, the same batches.

Each run's summary: RssAnon once loaded, at the half, at the end and at most, and its growth over
the second half ((end - half) / half).  ``--png`` plots the samples, ``--json`` writes them.

    python benchmarks/bench_memory_soak.py --png docs/memory_soak.png   # all runs, ~12,000 sentences each
    python benchmarks/bench_memory_soak.py --runs library ct2 --limit 2000
    python benchmarks/bench_memory_soak.py --from-json a.json b.json --png soak.png  # runs taken apart, together
    python benchmarks/bench_memory_soak.py --runs service --limit 4000 --env MALLOC_ARENA_MAX=1 --no-embeddings

The service run also prints its RssAnon once idle ``IDLE_S`` after the workload.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

RUNS = ("library", "service", "ct2")
IDLE_S = 3.0  # seconds the service is left idle after the workload before its last reading
BEAM = 4


def rss_anon_mb(pid: int | str = "self") -> float:
    """Anonymous resident memory of a process (Linux /proc), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no RssAnon for pid {pid}")


def workload(limit: int | None, seed: int = 0) -> list[tuple[str, str, list[str]]]:
    """(source, target, texts) batches: every committed en-fr test split both ways, shuffled, in
    batches of 1-64 sentences; the first ``limit`` sentences (None: all)."""
    from rendition.model.training.data import SPLITS_DIR, read_tsv

    items = []
    for path in sorted(SPLITS_DIR.glob("test.*en-fr.tsv")):
        for p in read_tsv(path):
            items += [("en", "fr", p.src), ("fr", "en", p.tgt)]
    rng = random.Random(seed)
    rng.shuffle(items)
    items = items[:limit] if limit else items
    batches, i = [], 0
    while i < len(items):
        size = rng.randint(1, 64)
        for direction in (("en", "fr"), ("fr", "en")):
            texts = [t for s, g, t in items[i : i + size] if (s, g) == direction]
            if texts:
                batches.append((*direction, texts))
        i += size
    return batches


def sampled(batches: list[tuple[str, str, list[str]]], every: int) -> Iterator[tuple[int, bool]]:
    """(sentences served so far, whether to sample now) after each batch."""
    done, mark = 0, every
    for _, _, texts in batches:
        done += len(texts)
        yield done, done >= mark
        while mark <= done:
            mark += every


def child(run: str, limit: int | None, every: int, threads: int, max_length: int) -> None:
    """In a fresh process: the library or CTranslate2 over the workload; a JSON line per sample."""
    import torch

    torch.set_num_threads(threads)
    batches = workload(limit)
    if run == "library":
        from rendition.model.translation.translator import Translator

        tr = Translator.from_pretrained(device="cpu", compute_type="int8")
    else:
        from rendition.model.export.ct2 import RENDITION_CONFIG, SP_MODEL, CT2Engine, CT2Translator, export_ct2
        from rendition.model.tokenizer import Tokenizer
        from rendition.model.translation.transformer import TransformerConfig
        from rendition.model.translation.translator import DEFAULT_TRANSLATOR

        out = export_ct2(DEFAULT_TRANSLATOR, Path(tempfile.mkdtemp(prefix="bench_memory_soak_")) / "ct2")
        tok = Tokenizer(out / SP_MODEL)
        engine = CT2Engine(out, tok.pieces(), "cpu", "int8", threads=1, inter_threads=2)
        tr = CT2Translator(engine, tok, TransformerConfig.load(out / RENDITION_CONFIG))
    print(json.dumps({"sentences": 0, "rss_anon_mb": rss_anon_mb()}), flush=True)
    for (source, target, texts), (done, sample) in zip(batches, sampled(batches, every)):
        tr.translate(texts, source, target, beam_size=BEAM, max_length=max_length or 256)
        if sample:
            print(json.dumps({"sentences": done, "rss_anon_mb": rss_anon_mb()}), flush=True)


def run_child(run: str, args: argparse.Namespace) -> list[dict]:
    cmd = [sys.executable, __file__, "--child", run, "--every", str(args.every), "--threads", str(args.threads),
           "--max-length", str(args.max_length)]  # fmt: skip
    if args.limit:
        cmd += ["--limit", str(args.limit)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{run}: exit {res.returncode}\n{res.stderr[-3000:]}")
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


async def drive_service(url: str, pid: int, args: argparse.Namespace) -> list[dict]:
    import httpx

    batches = workload(args.limit)
    samples = [{"sentences": 0, "rss_anon_mb": rss_anon_mb(pid)}]
    gate = asyncio.Semaphore(4)

    async def send(client: httpx.AsyncClient, i: int, source: str, target: str, texts: list[str]) -> None:
        async with gate:
            body = {"text": texts, "source": source, "target": target, "beam_size": BEAM}
            r = await client.post("/v1/translate", json=body)
            r.raise_for_status()
            if i % 4 == 0 and not args.no_embeddings:
                (await client.post("/v1/embeddings", json={"input": texts})).raise_for_status()

    async with httpx.AsyncClient(base_url=url, timeout=600) as client:
        pending: set[asyncio.Task] = set()
        for i, ((source, target, texts), (done, sample)) in enumerate(zip(batches, sampled(batches, args.every))):
            pending.add(asyncio.create_task(send(client, i, source, target, texts)))
            if len(pending) >= 4 or sample:
                finished, pending = await asyncio.wait(
                    pending, return_when=asyncio.ALL_COMPLETED if sample else asyncio.FIRST_COMPLETED
                )
                for t in finished:
                    t.result()
            if sample:
                samples.append({"sentences": done, "rss_anon_mb": rss_anon_mb(pid)})
        for t in pending:
            await t
    await asyncio.sleep(IDLE_S)  # (past the workers' idle release: what the server keeps between bursts)
    print(f"# service idle {IDLE_S:.0f} s after the workload: RssAnon {rss_anon_mb(pid):.0f} MiB", file=sys.stderr, flush=True)
    return samples


def run_service(args: argparse.Namespace) -> list[dict]:
    from soak import start_server

    with tempfile.TemporaryDirectory(prefix="bench_memory_soak_") as tmp:
        env = {"RENDITION_TORCH_THREADS": str(args.threads), "OMP_NUM_THREADS": str(args.threads)}
        env |= dict(kv.split("=", 1) for kv in args.env)
        proc, url = start_server(env, Path(tmp) / "server.log", timeout=300)
        try:
            return asyncio.run(drive_service(url, proc.pid, args))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def summary(samples: list[dict]) -> dict:
    """RssAnon loaded, at the half (the sample nearest half the sentences), at the end, at most; the
    growth over the second half."""
    total = samples[-1]["sentences"]
    half = min(samples, key=lambda s: abs(s["sentences"] - total / 2))
    end = samples[-1]["rss_anon_mb"]
    return {
        "sentences": total, "loaded_mb": samples[0]["rss_anon_mb"], "half_mb": half["rss_anon_mb"], "end_mb": end,
        "max_mb": max(s["rss_anon_mb"] for s in samples), "second_half_growth": (end - half["rss_anon_mb"]) / half["rss_anon_mb"],
    }  # fmt: skip


def plot(results: dict[str, list[dict]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for run, samples in results.items():
        ax.plot([s["sentences"] for s in samples], [s["rss_anon_mb"] for s in samples], marker=".", label=run)
    ax.set_xlabel("sentences served")
    ax.set_ylabel("anonymous resident memory (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    ap.add_argument("--limit", type=int, default=None, help="the first N sentences of the workload (default: all)")
    ap.add_argument("--every", type=int, default=250, help="sentences between samples")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=0, help="the library's and CTranslate2's output tokens per sentence at most (0: the default); the service keeps its own")
    ap.add_argument("--env", nargs="*", default=[], metavar="KEY=VALUE", help="the service's environment (e.g. RENDITION_MAX_BATCH_SIZE=64, LD_PRELOAD=...)")
    ap.add_argument("--no-embeddings", action="store_true", help="the service run sends no embedding requests")
    ap.add_argument("--png", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--from-json", nargs="+", default=[], metavar="JSON",
                    help="no runs: the table and plot of runs written by earlier --json runs (e.g. runs taken in parallel)")  # fmt: skip
    ap.add_argument("--child", choices=("library", "ct2"), default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.limit, args.every, args.threads, args.max_length)
        return
    results: dict[str, list[dict]] = {}
    for path in args.from_json:
        results |= json.loads(Path(path).read_text())
    for run in [] if args.from_json else args.runs:
        t0 = time.perf_counter()
        results[run] = run_service(args) if run == "service" else run_child(run, args)
        print(f"# {run}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    total = max(r[-1]["sentences"] for r in results.values())
    print(f"# {os.cpu_count()} CPUs, {args.threads} threads, beam {BEAM}, {total} sentences, batches of 1-64")
    print("| run | sentences | RssAnon loaded | at the half | at the end | at most | growth over the second half |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for run, samples in results.items():
        s = summary(samples)
        print(f"| {run} | {s['sentences']} | {s['loaded_mb']:.0f} | {s['half_mb']:.0f} | {s['end_mb']:.0f} "
              f"| {s['max_mb']:.0f} | {s['second_half_growth']:+.1%} |")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.png:
        plot(results, Path(args.png), f"RssAnon against sentences served ({total} sentences, beam {BEAM})")


if __name__ == "__main__":
    main()
