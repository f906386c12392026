"""Bursts of legitimate requests against the admission ledger, on a real server.

    python benchmarks/bench_burst.py [--in-flight 64 128 256] [--n 256] [--env NAME=VALUE ...] [--python PY]

Starts ``python -m rendition.service.main`` (the shipped models, ``RENDITION_MODELS=translator``,
otherwise the defaults: the 60 s request timeout) and sends, for each ``--in-flight`` value in
turn, ``--n`` requests, each a DDTP test sentence written twice, that many at a time (closed
loop).  Per burst: the statuses, how many were refused, the burst's seconds, the slowest
request, and the admission gauges afterwards (the measured seconds per unit, the measured steps
per source token).  One JSON line per burst.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_engine import test_sentences  # noqa: E402
from bench_serving import serve  # noqa: E402
from loadgen import run_load  # noqa: E402


def gauges(url: str) -> dict[str, float]:
    """The admission gauges (``rendition_admission_*``), the ratio's per pair."""
    out = {}
    for fam in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=10).text):
        if fam.name.startswith("rendition_admission"):
            for sample in fam.samples:
                pair = sample.labels.get("pair")
                out[fam.name + (f"[{pair}]" if pair else "")] = sample.value
    return out


def burst(url: str, texts: list[str], in_flight: int) -> dict:
    body = lambda i: {"text": texts[i], "source": "en", "target": "fr"}  # noqa: E731
    res = asyncio.run(run_load(url, body=body, concurrency=in_flight, max_requests=len(texts), seconds=3600, timeout=600))
    statuses: dict[int, int] = {}
    for r in res.records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    return {"in_flight": in_flight, "requests": len(res.records), "statuses": statuses,
            "refused": statuses.get(429, 0), "seconds": round(res.seconds, 1),
            "slowest_s": round(max(r.latency for r in res.records), 1), **gauges(url)}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--in-flight", type=int, nargs="+", default=[64, 128, 256])
    p.add_argument("--n", type=int, default=256, help="requests per burst")
    p.add_argument("--env", nargs="+", default=[], metavar="NAME=VALUE", help="more server settings")
    p.add_argument("--python", default=os.environ.get("RENDITION_TEST_VENV") and f"{os.environ['RENDITION_TEST_VENV']}/bin/python",
                   help="an installed package's interpreter (scripts/installed-venv.sh DIR: DIR/venv/bin/python;"
                        " default: $RENDITION_TEST_VENV's), run outside the tree; without it, this tree")  # fmt: skip
    args = p.parse_args()
    texts = [f"{s} {s}" for s in test_sentences(n=args.n)]
    env = {"RENDITION_MODELS": "translator"} | dict(kv.split("=", 1) for kv in args.env)
    with serve(ROOT, 0, env, args.python) as url:
        for in_flight in args.in_flight:
            print(json.dumps(burst(url, texts, in_flight)), flush=True)


if __name__ == "__main__":
    main()
