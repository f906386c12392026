"""What latency an *ideal* server could reach on bench_serving's open-loop mix (its part (b)).

    python benchmarks/queue_bound.py [--workers 2] [--gain 1 2] [--loads 0.5 0.8] [--n 40000]
    python benchmarks/queue_bound.py --measure [--seconds 30]   # + this CPU's step cost, the real engine

The service's target for Poisson arrivals at 80% of capacity is a p99 within 3x the latency of the
mix's median sentence alone.  This simulates servers with no overhead at all on the same mix:

- a sentence's work is proportional to its length in translator pieces (+1 for the end of
  sentence), scaled so the median sentence alone takes 1 time unit on one worker;
- ``ps``: each of ``--workers`` workers runs all its sentences at once (what continuous batching
  does), arrivals go to the worker with the fewest sentences; with ``n`` sentences a worker does
  ``min(n, G)`` units of work per unit of time: a step costs the same for up to ``G`` sentences
  and grows in proportion beyond.  ``--gain G`` = 1 is a compute-bound CPU, whose step cost grows
  with its rows from the first; a GPU's step costs about the same up to large batches;
- ``fcfs``: one queue, each worker takes the oldest waiting sentence and runs it alone (G = 1);
- ``ps`` with a measured step cost (``--step-ms A B``, or ``--measure``): a step with ``n``
  sentences takes ``A + B n`` ms, so each of ``k`` sentences runs at ``(A + B) / (A + B k)`` of its
  speed alone: the shape of a CPU's step, a fixed part (the weights read once per step) and a part
  per row.  ``--measure`` fits A and B on the shipped translator (in-process, one thread per search,
  1-32 sentences of the mix per search, decoding steps only), twice: one search running, and one
  per worker at once (the workers share the memory bus, so under load a step costs more than
  alone); the second fit, with the speed alone taken from the first, is the ideal for this machine;
- ``fcfs``: one queue, each worker takes the oldest waiting sentence and runs it alone (G = 1);
- capacity = what the workers do with ``--in-flight`` sentences spread over them (bench_serving's
  saturating closed loop): workers x G for the flat steps; arrivals at ``load`` x capacity,
  exponential gaps, fixed seed.

``--measure`` also runs the real engine in-process (``TranslationScheduler``, ``--workers`` x 1
thread, the route's search options) on Poisson arrivals from the same mix at the same loads of its
own measured capacity, without HTTP (bench_serving (b) is the same through the server).

It prints p50 / p99 latency in units of the median sentence alone, the quantity the target bounds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_serving import SEED, median_sentence, mixed_pool, route_options  # noqa: E402

from rendition.model.tokenizer import Tokenizer  # noqa: E402

TRANSLATOR_SPM = Path(__file__).resolve().parents[1] / "model" / "pretrained" / "translator" / "sentencepiece.model"


def work_per_sentence() -> np.ndarray:
    """The mix's sentences' work, in units of its median sentence's."""
    lengths = np.array([len(ids) + 1 for ids in Tokenizer(TRANSLATOR_SPM).encode(mixed_pool())], dtype=float)
    return lengths / np.median(lengths)


Speed = Callable[[int], float]  # with k sentences, the speed of each (1 = its speed alone)


def flat(gain: float) -> Speed:
    """A step costs the same for up to ``gain`` sentences and grows in proportion beyond."""
    return lambda k: min(1.0, gain / k)


def affine(a_ms: float, b_ms: float, alone_ms: float | None = None) -> Speed:
    """A step with k sentences takes a + b k; alone (one sentence, the other workers idle), ``alone_ms``
    (default a + b)."""
    return lambda k: (alone_ms or a_ms + b_ms) / (a_ms + b_ms * k)


def processor_sharing(
    work: np.ndarray, load: float, workers: int, speed: Speed, n: int, in_flight: int = 64, seed: int = 0
) -> np.ndarray:
    """Latencies of ``n`` Poisson arrivals on ``workers`` batch-everything workers (see the module doc)."""
    rng = np.random.default_rng(seed)
    xs = rng.choice(work, n)
    k = max(1, in_flight // workers)
    rate = load * workers * k * speed(k) / work.mean()
    arrivals = np.cumsum(rng.exponential(1 / rate, n))

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
            w = min(range(workers), key=lambda v: len(remaining[v]))
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


# -- the real engine, in-process ----------------------------------------------------------------------
def _translator(workers: int = 0):
    import torch

    from rendition.model.translation.translator import Translator

    torch.set_num_threads(1)
    tr = Translator.from_pretrained(device="cpu")
    if workers:
        tr.start_workers(workers, 1)
    return tr, route_options


def measure_step_ms(
    sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32), concurrent: int = 1, seed: int = 0
) -> tuple[float, float]:
    """(A, B): a least-squares fit of step ms = A + B x sentences over the decoding steps of searches
    of ``sizes`` sentences drawn from the mix (one thread each; the step that joins them left out),
    ``concurrent`` searches at once in threads of their own (the workers of a loaded server share
    the memory bus: a step costs more when every core runs one)."""
    import torch

    from rendition.model.translation.search import BeamSearch

    tr, opts = _translator()
    pool = mixed_pool()
    steps: list[tuple[int, float]] = []  # (sentences, ms); one append per step (the threads share it)

    def run(rng: random.Random) -> None:
        torch.set_num_threads(1)  # (per thread)
        for size in sizes:
            for rnd in range(2):  # (the first round warms up)
                search = BeamSearch(tr.backend, opts(), capacity=max(sizes))
                for i, ids in enumerate(tr.preprocess(rng.sample(pool, size), "fr")):
                    search.add(i, ids)
                search.step()  # (the encoder pass and the first step)
                while not search.idle:
                    n, t0 = search.live, time.perf_counter()
                    search.step()
                    if rnd:
                        steps.append((n, (time.perf_counter() - t0) * 1e3))

    threads = [threading.Thread(target=run, args=(random.Random(seed + i),)) for i in range(concurrent)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    xs, ys = zip(*steps)
    b, a = np.polyfit(xs, ys, 1)
    return float(a), float(b)


def engine_open_loop(workers: int, loads: list[float], seconds: float, in_flight: int = 64) -> dict:
    """The scheduler on Poisson arrivals of the mix's sentences (one request each) at ``loads`` of
    its capacity (a closed loop of ``in_flight``, 20 s); latencies in units of the median sentence
    alone (median of 10)."""
    from rendition.model.text import segment

    tr, opts = _translator(workers)
    sched = tr.scheduler
    pool = mixed_pool()
    rng = random.Random(SEED)
    ids = {t: tr.preprocess(segment.split(t, "en").sentences, "fr") for t in set(pool)}
    picks = [ids[rng.choice(pool)] for _ in range(100_000)]

    def alone(text: str) -> float:
        out = []
        for _ in range(10):
            t0 = time.perf_counter()
            sched.submit(ids[text], opts()).future.result()
            out.append(time.perf_counter() - t0)
        return statistics.median(out)

    unit = alone(median_sentence(pool))
    t0, secs = time.perf_counter(), 20.0
    done: list[float] = []  # completion times of the closed loop
    lock = threading.Lock()
    sent = iter(range(len(picks)))

    def submit(_=None) -> None:  # (a completion's callback: the next request, until ``secs``)
        with lock:
            if _ is not None:
                done.append(time.perf_counter() - t0)
            k = next(sent)
        if time.perf_counter() - t0 < secs:
            sched.submit(picks[k], opts()).future.add_done_callback(submit)

    for _ in range(in_flight):
        submit()
    while sched.running_sentences or sched.waiting_sentences or time.perf_counter() - t0 < secs:
        time.sleep(0.05)
    capacity = sum(secs / 5 <= d <= secs for d in done) / (secs * 0.8)  # (ramp-up and drain left out)
    out = {"capacity_per_s": capacity, "unit_s": unit}
    for load in loads:
        gaps = np.random.default_rng(SEED).exponential(1 / (load * capacity), int(load * capacity * seconds * 2))
        arrivals = np.cumsum(gaps)
        arrivals = arrivals[arrivals < seconds]
        latency = np.full(len(arrivals), np.nan)
        start = time.perf_counter()
        for i, at in enumerate(arrivals):
            time.sleep(max(0.0, start + at - time.perf_counter()))
            sent = time.perf_counter()
            sched.submit(picks[50_000 + i], opts()).future.add_done_callback(
                lambda _, i=i, sent=sent, lat=latency: lat.__setitem__(i, time.perf_counter() - sent)
            )
        while np.isnan(latency).any():
            time.sleep(0.05)
        out[load] = latency / unit
    tr.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gain", type=float, nargs="+", default=[1.0, 2.0, 8.0, 32.0])
    ap.add_argument(
        "--step-ms", type=float, nargs=2, metavar=("A", "B"), help="a step with n sentences takes A + B n ms"
    )
    ap.add_argument("--alone-ms", type=float, help="a step with one sentence, the other workers idle (default A + B)")
    ap.add_argument("--measure", action="store_true", help="fit --step-ms on this CPU and run the real engine too")
    ap.add_argument("--seconds", type=float, default=30.0, help="--measure: the engine's arrivals per load")
    ap.add_argument("--in-flight", type=int, default=64, help="the saturating closed loop that defines capacity")
    ap.add_argument("--loads", type=float, nargs="+", default=[0.5, 0.8])
    ap.add_argument("--n", type=int, default=40000)
    args = ap.parse_args()
    work = work_per_sentence()
    print(
        f"mix: {len(work)} sentences; the 99th-percentile sentence = {np.percentile(work, 99):.2f} x the median one,"
        f" the mean = {work.mean():.2f} x"
    )
    servers: list[tuple[str, Speed]] = [(f"ps (batch all), G={g:g}", flat(g)) for g in args.gain]
    if args.measure:
        solo = measure_step_ms()
        busy = measure_step_ms(concurrent=args.workers)
        print(f"step cost, one worker: {solo[0]:.2f} + {solo[1]:.2f} x sentences ms; all {args.workers} busy:"
              f" {busy[0]:.2f} + {busy[1]:.2f} x sentences ms")  # fmt: skip
        servers.append((f"ps, step {solo[0]:.1f} + {solo[1]:.2f} n ms", affine(*solo)))
        servers.append((f"ps, step {busy[0]:.1f} + {busy[1]:.2f} n, alone {sum(solo):.1f}", affine(*busy, sum(solo))))
    elif args.step_ms:
        servers.append(
            (f"ps, step {args.step_ms[0]:.1f} + {args.step_ms[1]:.2f} n ms", affine(*args.step_ms, args.alone_ms))
        )
    engine = engine_open_loop(args.workers, args.loads, args.seconds, args.in_flight) if args.measure else None
    if engine:
        print(
            f"engine: capacity {engine['capacity_per_s']:.1f} sentences/s, the median sentence alone {engine['unit_s'] * 1e3:.1f} ms"
        )
    print(
        f"{'server (' + str(args.workers) + ' workers)':<42} {'load':>5} {'p50':>7} {'p99':>7}   (x the median sentence alone)"
    )
    for load in args.loads:
        rows = [("fcfs", first_come_first_served(work, load, args.workers, args.n))]
        rows += [
            (name, processor_sharing(work, load, args.workers, speed, args.n, args.in_flight))
            for name, speed in servers
        ]
        if engine:
            rows.append(("the engine, in-process (measured)", engine[load]))
        for name, lat in rows:
            print(f"{name:<42} {load:>5.2f} {np.percentile(lat, 50):>7.2f} {np.percentile(lat, 99):>7.2f}")


if __name__ == "__main__":
    main()
