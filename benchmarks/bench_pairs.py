"""Memory of a replica serving two language pairs against one serving en-fr alone.

Each setting is a real server (``python -m rendition.service.main``, translator and encoder, the
default int8 compute type on this CPU) started from a models directory (``RENDITION_MODELS_DIR``):

* ``en-fr``: the shipped translator alone;
* ``en-fr+de``: the shipped translator and a second pair package of the same size, a German
  stand-in (the shipped weights with ``"languages": ["de", "en"]``: the shipped tokenizer has a
  German tag, so it loads, warms up and decodes like a real en-de model of that shape, into poor
  German).  Until the en-de model is trained, it sizes a two-pair replica.

Each server's anonymous resident memory (``RssAnon`` of ``/proc/PID/status``: the heap and the
weights, without the shared library pages) is read once ready and after ``--sentences`` sentences
of each direction it serves (en->fr, fr->en; with de also en->de, de->en and fr->de through
English) in requests of 8, from the held-out test splits.

With ``--layouts``, the two-pair replica's throughput instead, under each worker layout: ``split``
(the default: the cores shared out among the translators, one single-threaded worker each on 2
cores) against ``full`` (each translator the layout it would have alone: two workers each, four
threads on 2 cores), with en->fr and en->de requests of 8 sentences sent at once from four
clients; the layouts take turns for ``--rounds`` rounds and each gets its best.

    python benchmarks/bench_pairs.py
    python benchmarks/bench_pairs.py --sentences 100
    python benchmarks/bench_pairs.py --layouts --sentences 48 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import DEFAULT_TRANSLATOR


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_anon_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no RssAnon")


def models_dir(root: Path, with_german: bool) -> Path:
    d = root / ("two" if with_german else "one")
    d.mkdir()
    (d / "en-fr").symlink_to(DEFAULT_TRANSLATOR)
    if with_german:
        de = d / "de-en"
        de.mkdir()
        for name in ("model.safetensors", "sentencepiece.model"):
            (de / name).symlink_to(DEFAULT_TRANSLATOR / name)
        config = json.loads((DEFAULT_TRANSLATOR / "config.json").read_text())
        (de / "config.json").write_text(json.dumps({**config, "languages": ["de", "en"]}))
    return d


def workload(with_german: bool, n: int) -> list[tuple[str, str, list[str]]]:
    fr = read_tsv(SPLITS_DIR / "test.en-fr.tsv")[:n]
    jobs = [("en", "fr", [p.src for p in fr]), ("fr", "en", [p.tgt for p in fr])]
    if with_german:
        de = read_tsv(SPLITS_DIR / "test.en-de.tsv")[:n]
        jobs += [("en", "de", [p.src for p in de]), ("de", "en", [p.tgt for p in de]), ("fr", "de", [p.tgt for p in fr])]
    return jobs


@contextlib.contextmanager
def server(models: Path, **settings: str) -> Iterator[tuple[subprocess.Popen, httpx.Client]]:
    """A ready server on ``models`` (a models directory) with these ``RENDITION_*`` settings."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENDITION_")}
    env |= {"RENDITION_MODELS_DIR": str(models), "RENDITION_PORT": str(port), "RENDITION_LOG_LEVEL": "warning"}
    env |= {f"RENDITION_{k.upper()}": v for k, v in settings.items()}
    proc = subprocess.Popen([sys.executable, "-m", "rendition.service.main"], env=env, cwd=models, stdout=subprocess.DEVNULL)
    try:
        http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=300)
        for _ in range(600):
            try:
                if http.get("/health/ready").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield proc, http
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def throughput(models: Path, n: int, settings: dict[str, str]) -> float:
    """Sentences per second of en->fr and en->de requests of 8 from four clients at once."""
    jobs = [(s, t, texts[i : i + 8]) for s, t, texts in workload(True, n) if s == "en" for i in range(0, len(texts), 8)]
    with server(models, **settings) as (_, http):
        def send(job: tuple[str, str, list[str]]) -> int:
            r = http.post("/v1/translate", json={"text": job[2], "source": job[0], "target": job[1], "truncate": True})
            r.raise_for_status()
            return len(job[2])

        t0 = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            done = sum(pool.map(send, jobs))
        return done / (time.perf_counter() - t0)


def layouts(root: Path, n: int, rounds: int) -> None:
    models = models_dir(root, True)
    cores = str(os.cpu_count() or 2)
    settings = {"split": {}, "full": {"translation_workers": cores, "worker_threads": "1"}}
    best = dict.fromkeys(settings, 0.0)
    for _ in range(rounds):
        for name, s in settings.items():
            best[name] = max(best[name], throughput(models, n, s))
    print(f"| layout | sentences/s (best of {rounds}) |")
    print("|---|---|")
    for name, v in best.items():
        print(f"| {name} | {v:.1f} |")
    print(f"split / full: {best['split'] / best['full']:.3f}x")


def measure(root: Path, with_german: bool, n: int) -> dict:
    with server(models_dir(root, with_german)) as (proc, http):
        ready = rss_anon_mib(proc.pid)
        sentences = 0
        t0 = time.perf_counter()
        for source, target, texts in workload(with_german, n):
            for i in range(0, len(texts), 8):
                r = http.post("/v1/translate", json={"text": texts[i : i + 8], "source": source, "target": target, "truncate": True})
                r.raise_for_status()
                sentences += len(texts[i : i + 8])
        return {"setting": "en-fr+de" if with_german else "en-fr", "ready_mib": round(ready, 1),
                "after_mib": round(rss_anon_mib(proc.pid), 1), "sentences": sentences, "seconds": round(time.perf_counter() - t0, 1)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=60, help="per direction")
    ap.add_argument("--layouts", action="store_true", help="the two-pair replica's throughput per worker layout")
    ap.add_argument("--rounds", type=int, default=2, help="--layouts: rounds, the layouts in turns")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-pairs-"))
    try:
        if args.layouts:
            return layouts(root, args.sentences, args.rounds)
        rows = [measure(root, german, args.sentences) for german in (False, True)]
    finally:
        shutil.rmtree(root)
    print("| setting | RssAnon MiB ready | after | sentences | seconds |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['setting']} | {r['ready_mib']} | {r['after_mib']} | {r['sentences']} | {r['seconds']} |")


if __name__ == "__main__":
    main()
