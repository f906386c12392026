"""Sizing one replica: tokens/s and memory of a real server on the shipped models (docs/deploy.md).

Starts ``python -m rendition.service.main`` for each thread count, waits until it is ready, drives a
closed-loop load of short translations (``scripts/loadgen.py``) and reads the service's own
counters before and after: input and generated tokens per wall second and per CPU-second of the
server process (the fairer number on a shared machine), plus its resident memory (RSS after the
run and peak, from /proc).  Then one embeddings run the same way.

    python benchmarks/bench_replica.py --threads 1 2 --seconds 20 --concurrency 8
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from loadgen import run_load, summarize  # noqa: E402

EMBED_TEXTS = ["A tool for translation.", "The weather is nice today.", "Where is the train station?", "Un outil de traduction."]


def counters(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name in ("rendition_input_tokens_total", "rendition_generated_tokens_total"):
                key = s.name + (f":{s.labels['model']}" if "model" in s.labels else "")
                out[key] = s.value
    return out


def proc_stats(pid: int) -> tuple[float, int, int]:
    """(CPU seconds, RSS bytes, peak RSS bytes) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return cpu, int(status["VmRSS"].split()[0]) * 1024, int(status["VmHWM"].split()[0]) * 1024


def run(threads: int, seconds: float, concurrency: int) -> list[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENDITION_")}
    env.update(RENDITION_TORCH_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    proc = subprocess.Popen([sys.executable, "-m", "rendition.service.main", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = []
    try:
        deadline = time.monotonic() + 300
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            try:
                if httpx.get(f"{url}/health/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        _, rss_ready, _ = proc_stats(proc.pid)
        for task, path, body, key_in, key_out in (
            ("translate", "/v1/translate", None, "rendition_input_tokens_total:translator", "rendition_generated_tokens_total"),
            ("embed", "/v1/embeddings", lambda i: {"input": [EMBED_TEXTS[i % 4], EMBED_TEXTS[(i + 1) % 4]]},
             "rendition_input_tokens_total:encoder", None),
        ):
            kw = {"body": body} if body else {}
            asyncio.run(run_load(url, path=path, concurrency=concurrency, seconds=2, **kw))  # warm-up
            c0, (cpu0, _, _) = counters(url), proc_stats(proc.pid)
            res = asyncio.run(run_load(url, path=path, concurrency=concurrency, seconds=seconds, **kw))
            c1, (cpu1, rss, peak) = counters(url), proc_stats(proc.pid)
            s = summarize(res)
            assert s["errors"] == 0 and s["rejected_429"] == 0, s
            wall, cpu = res.seconds, cpu1 - cpu0
            tin = c1[key_in] - c0[key_in]
            tout = c1[key_out] - c0[key_out] if key_out else 0.0
            rows.append(
                f"| {threads} | {task} | {s['goodput_per_s']} | {tin / wall:.0f} | {tout / wall:.0f} | {(tin + tout) / cpu:.0f} "
                f"| {cpu / wall:.2f} | {s['ok_p50_ms']} | {rss_ready / 2**20:.0f} / {rss / 2**20:.0f} / {peak / 2**20:.0f} |"
            )
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args()
    print(f"# {os.cpu_count()} cores, concurrency {args.concurrency}, {args.seconds:.0f} s per run, shipped models")
    print("| threads | task | req/s | input tok/s | generated tok/s | tokens per CPU-s | cores busy | p50 ms | RSS MiB ready / after / peak |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t in args.threads:
        for row in run(t, args.seconds, args.concurrency):
            print(row)


if __name__ == "__main__":
    main()
