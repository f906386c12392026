"""Resident memory of the shipped translator in each compute type, one fresh process each.

Each compute type (float32, int8, and bfloat16 where the CPU computes it natively) runs in a
subprocess of its own: it loads the shipped translator (``Translator.from_pretrained(device="cpu",
compute_type=...)``), translates a few held-out sentences both ways (beam 4, so that whatever is
built lazily is built) and reports its resident memory (VmRSS of /proc/self/status) three times:
once loaded; after the translations, as it is; and after the translations once the C heap's free
pages are handed back (``release_freed_memory``, glibc's ``malloc_trim``), which leaves what the
process still holds rather than the freed working memory of the last search that glibc keeps.
Also its peak (VmHWM) and the bytes of the weight tensors it holds (``Translator.weight_bytes``:
parameters, buffers, inference copies and int8 tables, each storage once).  A baseline process
imports the same modules (torch and the package) and loads no model: the table gives each figure
over the baseline's, and the last lines the int8 / float32 ratios.

    python benchmarks/bench_memory.py
    python benchmarks/bench_memory.py --types float32 int8 --sentences 16
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402
from bench_disan import status_mb  # noqa: E402

from rendition.model.kernels.compute_type import bfloat16_unavailable  # noqa: E402
from rendition.model.training.data import SPLITS_DIR, read_tsv  # noqa: E402
from rendition.model.translation.translator import Translator  # noqa: E402
from rendition.model.weights import release_freed_memory  # noqa: E402

TYPES = ("float32", "int8", "bfloat16")


def child(compute_type: str, sentences: int, threads: int) -> dict:
    """In a fresh process: the baseline (nothing loaded) or the translator in ``compute_type``;
    sizes in MiB."""
    torch.set_num_threads(threads)
    out: dict = {"compute_type": compute_type}
    if compute_type != "baseline":
        pairs = read_tsv(SPLITS_DIR / "test.en-fr.tsv")[:sentences]
        t0 = time.perf_counter()
        tr = Translator.from_pretrained(device="cpu", compute_type=compute_type)
        gc.collect()
        out.update(loaded_mb=status_mb("VmRSS"), loaded_anon_mb=status_mb("RssAnon"))
        tr.translate([p.src for p in pairs], "en", "fr", beam_size=4)
        tr.translate([p.tgt for p in pairs], "fr", "en", beam_size=4)
        out.update(
            ran=tr.compute_type, backend=tr.backend.name, seconds=time.perf_counter() - t0,
            weights_mb=tr.weight_bytes / 2**20, parameters=sum(p.numel() for p in tr.model.parameters()),
        )  # fmt: skip
    gc.collect()
    out.update(rss_mb=status_mb("VmRSS"), peak_mb=status_mb("VmHWM"))
    out.setdefault("loaded_mb", out["rss_mb"])
    out.setdefault("loaded_anon_mb", status_mb("RssAnon"))
    release_freed_memory()
    out.update(live_mb=status_mb("VmRSS"), live_anon_mb=status_mb("RssAnon"))
    return out


def measure(compute_type: str, sentences: int, threads: int) -> dict:
    cmd = [sys.executable, __file__, "--child", compute_type, "--sentences", str(sentences), "--threads", str(threads)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        raise RuntimeError(f"{compute_type}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--types", nargs="+", choices=TYPES, default=None, help="default: float32, int8, and bfloat16 where native")
    ap.add_argument("--sentences", type=int, default=8, help="DDTP test sentences translated each way before measuring")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child, a.sentences, a.threads)))
        return
    types = a.types or [t for t in TYPES if t != "bfloat16" or bfloat16_unavailable() is None]
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{a.threads} threads, {a.sentences} DDTP test sentences each way, beam 4")  # fmt: skip
    base = measure("baseline", a.sentences, a.threads)
    rows = {t: measure(t, a.sentences, a.threads) for t in types}
    keys = ("loaded_mb", "loaded_anon_mb", "rss_mb", "live_mb", "live_anon_mb")
    print("MiB over the baseline process (torch and the package imported, no model; its RSS "
          f"{base['rss_mb']:.0f} MiB, {base['live_mb']:.0f} with the free heap returned)")  # fmt: skip
    print("| compute type | back end | weight tensors | RSS loaded | of which anonymous | RSS after translating "
          "| the same, free heap returned | of which anonymous | peak RSS | load + translate s |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t, r in rows.items():
        name = t if r["ran"] == t else f"{t} (ran {r['ran']})"
        cells = " | ".join(f"{r[k] - base[k]:.1f}" for k in keys)
        print(f"| {name} | {r['backend']} | {r['weights_mb']:.1f} | {cells} | {r['peak_mb'] - base['rss_mb']:.1f} "
              f"| {r['seconds']:.1f} |")  # fmt: skip
    if "float32" in rows and "int8" in rows:
        f32, i8 = rows["float32"], rows["int8"]
        ratio = {k: f"{(i8[k] - base[k]) / (f32[k] - base[k]):.1%}" for k in keys}
        print(f"int8 / float32 (over the baseline): weight tensors {i8['weights_mb'] / f32['weights_mb']:.1%}; "
              f"loaded RSS {ratio['loaded_mb']} (anonymous {ratio['loaded_anon_mb']}); after translating RSS "
              f"{ratio['rss_mb']}; with the free heap returned {ratio['live_mb']} (anonymous {ratio['live_anon_mb']})")  # fmt: skip
        files = {t: (r["live_mb"] - r["live_anon_mb"]) - (base["live_mb"] - base["live_anon_mb"]) for t, r in rows.items()}
        print("pages read from files (libraries' code: RSS less anonymous, free heap returned) over the baseline: "
              + ", ".join(f"{t} {v:.1f} MiB" for t, v in files.items()))  # fmt: skip
        print(f"the translator's own memory (anonymous, free heap returned): int8 / float32 {ratio['live_anon_mb']}")


if __name__ == "__main__":
    main()
