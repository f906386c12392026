"""What latency an *ideal* server could reach on issue 17's open-loop mix (bench_serving (b)).

    python benchmarks/queue_bound.py [--workers 2] [--gain 1 2] [--loads 0.5 0.8] [--n 40000]

Issue 17's target for Poisson arrivals at 80% of capacity is a p99 within 3x the latency of the
mix's median sentence alone.  This simulates servers with no overhead at all on the same mix:

- a sentence's work is proportional to its length in translator pieces (+1 for the end of
  sentence), scaled so the median sentence alone takes 1 time unit on one worker;
- ``ps``: each of ``--workers`` workers runs all its sentences at once (what continuous batching
  does), arrivals go to the worker with the fewest sentences; with ``n`` sentences a worker does
  ``min(n, G)`` units of work per unit of time: a step costs the same for up to ``G`` sentences
  and grows in proportion beyond.  ``--gain G`` = 1 is a compute-bound CPU, whose step cost grows
  with its rows from the first; a GPU's step costs about the same up to large batches;
- ``fcfs``: one queue, each worker takes the oldest waiting sentence and runs it alone (G = 1);
- capacity = workers x G / mean work; arrivals at ``load`` x capacity, exponential gaps, fixed seed.

It prints p50 / p99 latency in units of the median sentence alone, the quantity the target bounds.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_serving import mixed_pool  # noqa: E402

from model.tokenizer import Tokenizer  # noqa: E402

TRANSLATOR_SPM = Path(__file__).resolve().parents[1] / "model" / "pretrained" / "translator" / "sentencepiece.model"


def work_per_sentence() -> np.ndarray:
    """The mix's sentences' work, in units of its median sentence's."""
    lengths = np.array([len(ids) + 1 for ids in Tokenizer(TRANSLATOR_SPM).encode(mixed_pool())], dtype=float)
    return lengths / np.median(lengths)


def processor_sharing(work: np.ndarray, load: float, workers: int, gain: float, n: int, seed: int = 0) -> np.ndarray:
    """Latencies of ``n`` Poisson arrivals on ``workers`` batch-everything workers (see the module doc)."""
    rng = np.random.default_rng(seed)
    xs = rng.choice(work, n)
    rate = load * workers * gain / work.mean()
    arrivals = np.cumsum(rng.exponential(1 / rate, n))

    def speed(k: int) -> float:  # work done per unit of time for each of k sentences
        return min(1.0, gain / k)

    remaining: list[dict[int, float]] = [{} for _ in range(workers)]
    latency = np.zeros(n)
    t, i, done = 0.0, 0, 0
    while done < n:
        nxt, who = np.inf, None
        for w, jobs in enumerate(remaining):
            if jobs:
                j = min(jobs, key=jobs.__getitem__)
                tc = t + jobs[j] / speed(len(jobs))
                if tc < nxt:
                    nxt, who = tc, (w, j)
        arrives = i < n and arrivals[i] <= nxt  # the next event: an arrival, else a completion
        until = arrivals[i] if arrives else nxt
        for jobs in remaining:
            if jobs:
                d = (until - t) * speed(len(jobs))
                for j in jobs:
                    jobs[j] -= d
        t = until
        if arrives:
            w = min(range(workers), key=lambda k: len(remaining[k]))
            remaining[w][i] = xs[i]
            i += 1
        else:
            w, j = who
            del remaining[w][j]
            latency[j] = t - arrivals[j]
            done += 1
    return latency[n // 10 :]  # the first tenth warms the queues up


def first_come_first_served(work: np.ndarray, load: float, workers: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    xs = rng.choice(work, n)
    arrivals = np.cumsum(rng.exponential(1 / (load * workers / work.mean()), n))
    free = np.zeros(workers)
    latency = np.zeros(n)
    for i in range(n):
        w = int(free.argmin())
        free[w] = max(free[w], arrivals[i]) + xs[i]
        latency[i] = free[w] - arrivals[i]
    return latency[n // 10 :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gain", type=float, nargs="+", default=[1.0, 2.0, 8.0, 32.0])
    ap.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.8])
    ap.add_argument("--n", type=int, default=40000)
    args = ap.parse_args()
    work = work_per_sentence()
    print(
        f"mix: {len(work)} sentences; the 99th-percentile sentence = {np.percentile(work, 99):.2f} x the median one,"
        f" the mean = {work.mean():.2f} x"
    )
    print(f"{'server':<34} {'load':>5} {'p50':>7} {'p99':>7}   (x the median sentence alone)")
    for load in args.loads:
        lat = first_come_first_served(work, load, args.workers, args.n)
        print(f"{f'fcfs, {args.workers} workers':<34} {load:>5.2f} {np.percentile(lat, 50):>7.2f} {np.percentile(lat, 99):>7.2f}")
        for gain in args.gain:
            lat = processor_sharing(work, load, args.workers, gain, args.n)
            name = f"ps (batch all), {args.workers} workers, G={gain:g}"
            print(f"{name:<34} {load:>5.2f} {np.percentile(lat, 50):>7.2f} {np.percentile(lat, 99):>7.2f}")


if __name__ == "__main__":
    main()
