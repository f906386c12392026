"""Memory that stays put: the int8 translator library, in a fresh process, over a short slice of
the committed test splits both ways (``benchmarks/bench_memory_soak.py``'s workload: batches of
1-64 sentences, beam 4), must not keep growing: its anonymous resident memory (RssAnon) at the end
is within 10% of its value at the half.  Growth, not an absolute number; the full run and its
figures are in docs/benchmarks.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_memory_soak.py"


@pytest.mark.slow
def test_library_memory_levels_off_in_the_second_half() -> None:
    cmd = [sys.executable, str(BENCH), "--child", "library", "--limit", "240", "--every", "20", "--max-length", "32"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    samples = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    print("\n".join(f"{s['sentences']:>5} sentences: RssAnon {s['rss_anon_mb']:.0f} MiB" for s in samples))
    total = samples[-1]["sentences"]
    half = min(samples, key=lambda s: abs(s["sentences"] - total / 2))["rss_anon_mb"]
    second_half_max = max(s["rss_anon_mb"] for s in samples if s["sentences"] >= total / 2)
    assert second_half_max <= 1.10 * half, f"RssAnon grew from {half:.0f} to {second_half_max:.0f} MiB in the second half"
