"""Soak in CI: ``scripts/soak.py`` for 60 s at steady concurrency against a real server.

Zero failed requests, and the server's RSS after a 15 s warm-up grows by less than 10% (the
samples, p50/p99 latency and RSS every 5 s, are printed).  The 10-minute run is
``python scripts/soak.py --minutes 10 --png docs/soak.png`` (docs/reliability.md has its figures).
"""

from __future__ import annotations

import asyncio

import pytest
from soak import soak


@pytest.mark.slow
def test_soak_60s_no_errors_and_flat_memory(start_server):
    srv = start_server(default_beam_size=2, default_max_length=8, max_wait_ms=5)
    report = asyncio.run(soak(srv.url, srv.proc.pid, seconds=60, concurrency=6, interval=5, warmup=15))
    print()
    for k, v in report.items():
        if k != "samples":
            print(f"{k:<26} {v}")
    for s in report["samples"]:
        print(s)
    assert report["requests"] > 100
    assert report["errors"] == 0, report["error_examples"]
    assert report["rss_growth_after_warmup"] < 0.10
    assert srv.sample("rendition_requests", "_total", status="500") == 0
    assert srv.http.get("/health/ready").status_code == 200
