"""Serving benchmarks against a real uvicorn process on the shipped models.

    python benchmarks/bench_serving.py [--port 0] [--workers W --threads T] [--python PY | --root DIR]
    scripts/installed-venv.sh build/installed && python benchmarks/bench_serving.py --python build/installed/venv/bin/python
    python benchmarks/bench_serving.py --quick        # smoke run: small N, short runs
    python benchmarks/bench_serving.py --parts a --front floor   # (a)'s floor: the least a Python front does

The script starts ``python -m rendition.service.main`` (``rendition serve``; with ``--root`` another checkout's,
for a before/after comparison), waits for ``/health/ready`` and measures, in this order:

(a) HTTP efficiency: ``--n`` (256) single-sentence ``POST /v1/translate`` requests, the first
    sentences of the DDTP test split, ``--in-flight`` (64) at a time (httpx.AsyncClient, closed
    loop), against one in-process ``Translator.core`` call, in this script's process while the
    server idles, on the same sentences (split as the service splits them) with the route's
    defaults (beam 4, length penalty 1.0, max_length 256), on the server's compute type and K/V
    cache type (read from ``/v1/models``).  efficiency = in-process seconds / HTTP seconds.  The
    in-process call runs on the step-level scheduler at the server's layout (``--workers`` x
    ``--threads``, or the same automatic choice); ``--reference core`` runs it as one batch search
    on all cores instead.  Beside it, the same closed loop
    in-process (each request a ticket of the scheduler at the server's layout, ``--in-flight`` at a
    time, no HTTP): its seconds / HTTP seconds is HTTP's own share of the loss, the rest is what
    the in-flight limit and the drain at the end cost any server.  Also the requests' p50/p99
    latency, the CPU time per request of the server's event-loop thread (Linux schedstat; the least
    of the rounds: it competes with the workers for the same cores), the workers' core-seconds on a core,
    waiting for one and asleep over the fastest run of each closed loop (``worker_times``) and, from ``/metrics`` over the run, the translator's mean batch
    (``rendition_batch_size``: sentences per decoding step) and a sentence's mean time queued and computing (``rendition_queue_wait_seconds``,
    ``rendition_compute_seconds``), each when the server exports it.
(b) Open loop: single sentences of mixed lengths (drawn with a fixed seed from the DDTP and
    everyday test splits) arriving as a Poisson process (exponential gaps, fixed seed), not a
    closed loop.  Capacity (sentences/s) is first measured by a saturating closed loop
    (``--in-flight`` requests; completions while it was full, ramp-up and drain left out); then
    ``--seconds`` of arrivals at 50% and 80% of it: p50/p99/max latency.  Next to them, the
    latency of the pool's median-length sentence alone on the idle server (median of 10); the
    target: p99 at 80% <= 3x that.
(c) Embedding latency under translation load: one-sentence ``POST /v1/embeddings`` requests sent
    one after the other (``--embeddings``, 200) while ``--in-flight`` translation requests keep
    the translator saturated (each answered request is replaced at once); p50/p99/max, and the
    same on the idle server.  The target: p99 <= 50 ms under load.

Thread layout: ``--workers`` / ``--threads`` are passed to the server as
``RENDITION_TRANSLATION_WORKERS`` / ``RENDITION_WORKER_THREADS`` (the serving engine's settings);
left out, the server runs on its defaults; ``--env NAME=VALUE ...`` sets any other setting.  The
in-process references start from torch's default thread count (all cores), as the server does.
One table, then one JSON line.  Requests that fail are counted and reported, never dropped from the figures silently.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "scripts"))

import loadgen  # noqa: E402
from bench_engine import test_sentences  # noqa: E402
from checkout import tree_env  # noqa: E402
from floor_front import pipeline_ids  # noqa: E402
from loadgen import LoadResult, percentile, raw_closed_loop, run_load  # noqa: E402

SEED = 17


# -- the server -------------------------------------------------------------------------------------
@contextlib.contextmanager
def serve(
    root: Path, port: int, extra_env: dict[str, str], python: str | None = None, timeout: float = 300.0,
    front: str = "service",
) -> Iterator[str]:
    """``python -m rendition.service.main`` on ``port`` (0: a free one); yields its URL once ready.  With
    ``python`` (an installed package's interpreter) it runs from an empty directory outside any source
    tree, as a user's server does; without, this interpreter runs ``root``'s tree.  ``front`` "floor":
    the same server with ``floor_front.FloorFront`` in front of its app (the least a Python front
    can do for ``POST /v1/translate``)."""
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENDITION_")} | extra_env
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log, tempfile.TemporaryDirectory() as outside:
        python = os.path.abspath(python) if python else None  # (the server starts in another directory)
        if not python:
            env = tree_env(root, outside, env)  # (another checkout: its own tree)
        entry = ["-m", "rendition.service.main"] if front == "service" else [str(ROOT / "benchmarks" / "floor_front.py")]
        proc = subprocess.Popen([python or sys.executable, *entry, "--port", str(port)],
                                cwd=outside if python else root, env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            deadline = time.monotonic() + timeout
            while not _ready(url):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise SystemExit(f"server did not start:\n{log.read().decode(errors='replace')[-3000:]}")
                time.sleep(0.3)
            SERVER_PIDS[url] = proc.pid
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=60)


SERVER_PIDS: dict[str, int] = {}  # url -> the server's process id (serve)


def loop_cpu_seconds(url: str) -> float:
    """CPU time so far of the server's main thread, the one that runs the event loop (Linux
    schedstat: nanoseconds on a CPU); NaN where it cannot be read."""
    pid = SERVER_PIDS.get(url)
    try:
        return int(Path(f"/proc/{pid}/task/{pid}/schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return float("nan")


def worker_schedstat(pid: int) -> dict[str, tuple[float, float]]:
    """Per translation worker of process ``pid`` (its threads named ``translate-N``,
    ``rendition.model.threads``): seconds on a core and seconds waiting for one so far (Linux
    schedstat); {} where they cannot be read."""
    out = {}
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            if (task / "comm").read_text().startswith("translate-"):
                on_core, waiting = (task / "schedstat").read_text().split()[:2]
                out[task.name] = (int(on_core) / 1e9, int(waiting) / 1e9)
    except (OSError, ValueError):
        return {}
    return out


def worker_times(before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]], seconds: float) -> dict:
    """The workers' core-seconds over a run of ``seconds`` (``worker_schedstat`` before and after),
    summed: on a core, runnable but waiting for one (the cores the event loop, the client and the
    rest took from them), asleep (the rest: waits for the GIL, and for work in the drain at the end)."""
    both = [t for t in after if t in before]
    on_core = sum(after[t][0] - before[t][0] for t in both)
    waiting = sum(after[t][1] - before[t][1] for t in both)
    return {"on_core": round(on_core, 2), "waiting": round(waiting, 2), "asleep": round(len(both) * seconds - on_core - waiting, 2)}


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


TRANSLATOR_HISTOGRAMS = ("rendition_batch_size", "rendition_queue_wait_seconds", "rendition_compute_seconds")


def histogram_sums(url: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of the translator's histograms in TRANSLATOR_HISTOGRAMS that the server exports."""
    out = {}
    for fam in text_string_to_metric_families(httpx.get(f"{url}/metrics", timeout=10).text):
        if fam.name in TRANSLATOR_HISTOGRAMS:
            got = {s.name: s.value for s in fam.samples if s.labels.get("model") == "translator"}
            if f"{fam.name}_count" in got:
                out[fam.name] = (got[f"{fam.name}_sum"], got[f"{fam.name}_count"])
    return out


def histogram_means(before: dict, after: dict) -> dict[str, float]:
    """Mean of each histogram's observations between two ``histogram_sums``."""
    out = {}
    for name in TRANSLATOR_HISTOGRAMS:
        (s0, c0), (s1, c1) = before.get(name, (0.0, 0.0)), after.get(name, (0.0, 0.0))
        out[name] = (s1 - s0) / (c1 - c0) if c1 > c0 else float("nan")
    return out


# -- measurements ---------------------------------------------------------------------------------
def translate_body(text: str) -> dict:
    return {"text": text, "source": "en", "target": "fr"}  # the route's defaults for everything else


def latencies(result: LoadResult) -> dict:
    """p50/p99/max (ms) of the 2xx answers, and how many requests failed."""
    ok = [r.latency for r in result.records if 200 <= r.status < 300]
    failed = sorted({r.status for r in result.records} - set(range(200, 300)))
    return {"requests": len(result.records), "failed": len(result.records) - len(ok), "failed_statuses": failed,
            "p50_ms": round(percentile(ok, 50) * 1e3, 1), "p99_ms": round(percentile(ok, 99) * 1e3, 1),
            "max_ms": round(max(ok, default=float("nan")) * 1e3, 1), "seconds": round(result.seconds, 3)}  # fmt: skip


def route_options():
    """A fresh ``TranslationOptions`` with ``POST /v1/translate``'s defaults (beam 4, length penalty 1.0,
    max_length 256): what the in-process references run."""
    from rendition.model.translation.options import TranslationOptions

    return TranslationOptions(beam_size=4, length_penalty=1.0, max_length=256)


_TORCH_THREADS: int | None = None  # torch's default thread count, read on the first in-process call


def server_translator(url: str) -> dict:
    """The served translator's details (``/v1/models``): its compute type and K/V cache type."""
    models = httpx.get(f"{url}/v1/models", timeout=10).json()["data"]
    return next(m for m in models if m.get("task") == "translation")


def in_process_seconds(
    texts: list[str], reference: str, workers: int, threads: int, kinds: dict, rounds: int = 1, in_flight: int = 0
) -> tuple[float, dict]:
    """The model work the service does for ``texts`` (``service_sentences``, and the second decoding
    of a sentence cut by its length limit), in-process, on the server's compute type and K/V cache
    type (``kinds``: ``server_translator``): as one ``Translator.core`` call, on the batch path
    (``reference`` "core") or the step-level scheduler at ``workers`` x ``threads`` (0: auto); the
    fastest of ``rounds`` calls.  ``in_flight`` > 0: instead of one call, the scheduler runs the
    requests as (a)'s closed loop does, each a ticket of its own and ``in_flight`` at a time, without HTTP.
    Returns the seconds and the workers' times over that fastest call (``worker_times``)."""
    import torch

    from rendition.model.translation.search import ended_by_limit
    from rendition.model.translation.translator import Translator

    global _TORCH_THREADS
    _TORCH_THREADS = _TORCH_THREADS or torch.get_num_threads()
    torch.set_num_threads(_TORCH_THREADS)  # a second call: this function left the pool at 1 thread
    tr = Translator.from_pretrained(device="cpu", compute_type=kinds["compute_type"], kv_cache_dtype=kinds["kv_cache_dtype"])
    assert tr.compute_type == kinds["compute_type"], (tr.compute_type, kinds)
    if reference == "scheduler" or in_flight:
        tr.start_workers(workers, threads)
    requests = service_sentences(tr, texts)
    sources = [s for r in requests for s in r]
    opts = route_options
    tr.core(sources[:8], opts())  # warm-up
    seconds, workers = float("inf"), {}
    for _ in range(rounds):
        t0, w0 = time.perf_counter(), worker_schedstat(os.getpid())
        if in_flight:
            closed_loop(tr.scheduler, requests, opts, in_flight)
        else:
            results = tr.core(sources, opts())
            again = [s for s, c in zip(sources, ended_by_limit(sources, results, opts())) if c]
            if again:
                tr.core(again, second_options(opts()))
        if (took := time.perf_counter() - t0) < seconds:
            seconds, workers = took, worker_times(w0, worker_schedstat(os.getpid()), took)
    tr.close()
    torch.set_num_threads(1)  # this process's pool stays quiet while the server is measured
    time.sleep(1.0)
    return seconds, workers


def service_sentences(tr, texts: list[str]) -> list[list[list[int]]]:
    """Per text, the token ids the service's text pipeline hands the translator (``floor_front.pipeline_ids``)."""
    return [pipeline_ids(tr, text, "en", "fr", route_options()) for text in texts]


def second_options(opts):
    """The service's second decoding of a sentence cut by its length limit (the pipeline's, at the
    default RENDITION_LENGTH_FALLBACK_NO_REPEAT_NGRAM)."""
    from rendition.model.text import pipeline

    return pipeline.fallback_options(opts, pipeline.DEFAULT_FALLBACK_NGRAM)


def closed_loop(scheduler, requests: list[list[list[int]]], opts, in_flight: int) -> None:
    """Submit ``requests`` to the scheduler ``in_flight`` at a time, the next one as soon as one is
    answered (what (a)'s HTTP clients do); returns when all are answered.  A request with a
    sentence cut by its length limit is answered after that sentence's second decoding, as the
    service answers it."""
    import threading

    from rendition.model.translation.search import ended_by_limit

    lock, done, state = threading.Lock(), threading.Event(), {"next": 0, "left": len(requests)}

    def submit() -> None:
        with lock:
            k = state["next"]
            state["next"] += 1
        if k < len(requests):
            first = opts()
            scheduler.submit(requests[k], first, on_done=functools.partial(decoded, requests[k], first))

    def decoded(sources, first, ticket) -> None:
        again = [s for s, c in zip(sources, ended_by_limit(sources, ticket.outcome[0], first)) if c]
        if again:
            scheduler.submit(again, second_options(first), on_done=answered)
        else:
            answered(ticket)

    def answered(_) -> None:
        with lock:
            state["left"] -= 1
            if state["left"] == 0:
                done.set()
        submit()

    for _ in range(min(in_flight, len(requests))):
        submit()
    done.wait()


def http_efficiency(
    url: str, texts: list[str], in_flight: int, reference: tuple[str, int, int], rounds: int = 3, client: str = "raw"
) -> dict:
    """Each side is the fastest of ``rounds`` runs, the sides taking turns (on a shared 2-core
    machine a single run of either can swing by a third).  ``client``: the lean keep-alive client (``loadgen.raw_closed_loop``)
    or httpx; the client's own CPU time per request is reported, as it shares the server's cores, and
    the server's event loop's."""
    load = raw_closed_loop if client == "raw" else run_load
    extra = {} if client == "raw" else {"seconds": 600}

    def closed_loop_run(n: int, body) -> LoadResult:
        return (loadgen.run if client == "raw" else asyncio.run)(load(url, body=body, concurrency=in_flight, max_requests=n, timeout=300, **extra))

    closed_loop_run(in_flight, lambda i: translate_body(texts[i % len(texts)]))  # warm-up
    kinds = server_translator(url)
    h0 = histogram_sums(url)
    res, client_cpu, local, loop, loop_cpu = None, 0.0, float("inf"), float("inf"), float("inf")
    workers: dict = {}
    workers_local: dict = {}
    for _ in range(rounds):  # (the three in turn, so that a slow spell of the machine hits them alike)
        local = min(local, in_process_seconds(texts, *reference, kinds)[0])
        # The same closed loop in-process (the scheduler at the server's layout, no HTTP): what the
        # in-flight limit and the drain at the end cost, apart from HTTP's own share.
        took, took_workers = in_process_seconds(texts, "scheduler", *reference[1:], kinds, in_flight=in_flight)
        if took < loop:
            loop, workers_local = took, took_workers
        cpu0, loop0, w0 = time.process_time(), loop_cpu_seconds(url), worker_schedstat(SERVER_PIDS.get(url, -1))
        run = closed_loop_run(len(texts), lambda i: translate_body(texts[i]))
        loop_cpu = min(loop_cpu, loop_cpu_seconds(url) - loop0)
        if res is None or run.seconds < res.seconds:
            res, client_cpu = run, time.process_time() - cpu0
            workers = worker_times(w0, worker_schedstat(SERVER_PIDS.get(url, -1)), run.seconds)
    means = histogram_means(h0, histogram_sums(url))
    out = latencies(res)
    return out | {"n": len(texts), "in_flight": in_flight, "reference": reference[0], "compute_type": kinds["compute_type"],
                  "kv_cache_dtype": kinds["kv_cache_dtype"], "in_process_s": round(local, 3),
                  "efficiency": round(local / res.seconds, 3), "client": client,
                  "client_cpu_ms_per_request": round(client_cpu / len(texts) * 1e3, 2),
                  "loop_cpu_ms_per_request": round(loop_cpu / len(texts) * 1e3, 2),
                  "in_process_loop_s": round(loop, 3), "http_share": round(loop / res.seconds, 3),
                  "workers_http": workers, "workers_in_process": workers_local, "mean_batch": round(means["rendition_batch_size"], 1),
                  "mean_queue_ms": round(means["rendition_queue_wait_seconds"] * 1e3, 1),
                  "mean_compute_ms": round(means["rendition_compute_seconds"] * 1e3, 1)}  # fmt: skip


def mixed_pool() -> list[str]:
    return test_sentences("test.en-fr.tsv") + test_sentences("test.everyday.en-fr.tsv")


def median_sentence(pool: list[str], q: float = 0.5) -> str:
    """The pool's sentence at quantile ``q`` of length in words (default the median; ties: the first)."""
    by_len = sorted(pool, key=lambda s: len(s.split()))
    return by_len[min(len(by_len) - 1, int(len(by_len) * q))]


async def sequential(url: str, path: str, body: dict, n: int) -> list[float]:
    """Latencies (s) of ``n`` identical requests sent one after the other; any non-2xx raises.  One
    request first, untimed: a client's first request in a process pays 30-45 ms of the client's own
    set-up (httpx's and anyio's), which the server never sees."""
    out = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        (await http.get("/health/live")).raise_for_status()
        for _ in range(n):
            t0 = time.perf_counter()
            r = await http.post(path, json=body)
            out.append(time.perf_counter() - t0)
            r.raise_for_status()
    return out


def steady_rate(result: LoadResult, seconds: float) -> float:
    """Answers per second of a closed loop while it was full: 2xx completions between a fifth of
    ``seconds`` (ramp-up) and ``seconds`` (after it the loop stops refilling and drains)."""
    lo = seconds / 5
    done = [r.start + r.latency for r in result.records if 200 <= r.status < 300]
    if not any(lo <= t <= seconds for t in done):  # nothing finished while full: too short a run
        raise SystemExit(f"no answer came back between {lo:.0f} s and {seconds:.0f} s: raise --capacity-seconds")
    return sum(lo <= t <= seconds for t in done) / (seconds - lo)


def open_loop(url: str, pool: list[str], in_flight: int, capacity_s: float, seconds: float) -> dict:
    rng = random.Random(SEED)
    picks = [rng.choice(pool) for _ in range(100_000)]
    body = lambda i: translate_body(picks[i])  # noqa: E731
    cap = asyncio.run(run_load(url, body=body, concurrency=in_flight, seconds=capacity_s, timeout=300))
    capacity = steady_rate(cap, capacity_s)
    median = median_sentence(pool)
    idle = asyncio.run(sequential(url, "/v1/translate", translate_body(median), 10))
    # The 99th-percentile-length sentence alone: a floor under any p99 of the mix (its own latency
    # with the whole machine to itself), whatever the engine does under load.
    long = median_sentence(pool, 0.99)
    idle_long = asyncio.run(sequential(url, "/v1/translate", translate_body(long), 10))
    out = {"capacity_per_s": round(capacity, 2), "capacity_run": latencies(cap), "median_sentence": median,
           "idle_median_sentence_ms": round(statistics.median(idle) * 1e3, 1), "p99_length_sentence": long,
           "idle_p99_length_sentence_ms": round(statistics.median(idle_long) * 1e3, 1)}  # fmt: skip
    for load in (0.5, 0.8):
        rate, t, arrivals = load * capacity, 0.0, []
        while (t := t + rng.expovariate(rate)) < seconds:
            arrivals.append(t)
        res = asyncio.run(run_load(url, body=body, arrivals=arrivals, seconds=seconds + 1, max_in_flight=4096,
                                   timeout=300))  # fmt: skip
        out[f"load_{round(load * 100)}"] = latencies(res) | {"offered_per_s": round(len(arrivals) / seconds, 2)}
    out["p99_80_over_idle"] = round(out["load_80"]["p99_ms"] / out["idle_median_sentence_ms"], 2)
    return out


async def embeddings_under_load(url: str, texts: list[str], in_flight: int, n: int) -> dict:
    body = {"input": "The weather is nice today, so we will walk to the station."}
    idle = await sequential(url, "/v1/embeddings", body, max(10, n // 4))
    stop = asyncio.Event()
    load = asyncio.create_task(run_load(url, body=lambda i: translate_body(texts[i % len(texts)]),
                                        concurrency=in_flight, seconds=3600, stop=stop, timeout=300))  # fmt: skip
    await asyncio.sleep(3.0)  # the translator fills up
    try:
        busy = await sequential(url, "/v1/embeddings", body, n)
    finally:
        stop.set()
        translations = await load
    ms = lambda xs, q: round(percentile(xs, q) * 1e3, 1)  # noqa: E731
    return {"idle_p50_ms": ms(idle, 50), "idle_p99_ms": ms(idle, 99), "n": n, "p50_ms": ms(busy, 50),
            "p99_ms": ms(busy, 99), "max_ms": round(max(busy) * 1e3, 1), "translations": latencies(translations)}  # fmt: skip


# -- report ---------------------------------------------------------------------------------------
def progress(part: str, result: dict) -> dict:
    """Each part's figures on stderr as soon as they exist (a run cut short keeps them)."""
    print(f"# ({part}) {json.dumps(result)}", file=sys.stderr, flush=True)
    return result


def _workers_note(a: dict) -> str:
    """The workers' core-seconds, HTTP against the in-process closed loop (where schedstat was read)."""
    h, p = a.get("workers_http"), a.get("workers_in_process")
    if not h or not p:
        return ""
    fmt = lambda w: f"{w['on_core']:.2f} / {w['waiting']:.2f} / {w['asleep']:.2f}"  # noqa: E731
    return f" workers' core-s on a core / waiting for one / asleep: HTTP {fmt(h)}, in-process closed loop {fmt(p)};"


def report(args: argparse.Namespace, a: dict, b: dict, c: dict, load0: float) -> None:
    print(f"# bench_serving  {time.strftime('%Y-%m-%d %H:%M:%S')}  server: {args.python or args.root}")
    print(f"{os.cpu_count()} cores, load average at start {load0:.2f}; server env: {args.env or 'defaults'}"
          + ("; front: the floor (benchmarks/floor_front.py), not the service" if args.front == "floor" else ""))
    print(f"{'measurement':<58}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}  other")
    rows = []
    if a:
        rows.append((f"(a) {a['n']} requests, {a['in_flight']} in flight", a,
         f"HTTP {a['seconds']:.2f} s vs in-process ({a['reference']}) {a['in_process_s']:.2f} s, both"
         f" {a['compute_type']}: efficiency {a['efficiency']:.2f}"
         f" (the same closed loop in-process {a['in_process_loop_s']:.2f} s: HTTP's share {a['http_share']:.2f});"
         f" client {a['client']}, {a['client_cpu_ms_per_request']} ms CPU per request;"
         f" the server's event loop {a['loop_cpu_ms_per_request']} ms CPU per request;"
         f"{_workers_note(a)}"
         f" mean batch {a['mean_batch']}; per sentence: queued {a['mean_queue_ms']} ms, computing"
         f" {a['mean_compute_ms']} ms"))  # fmt: skip
    if b:
        rows += [
        (f"(b) capacity: closed loop, {args.in_flight} in flight", b["capacity_run"],
         f"{b['capacity_per_s']} sentences/s"),
        ("(b) Poisson at 50% of capacity", b["load_50"], f"offered {b['load_50']['offered_per_s']}/s"),
        ("(b) Poisson at 80% of capacity", b["load_80"],
         f"offered {b['load_80']['offered_per_s']}/s; p99 / idle median sentence {b['p99_80_over_idle']} (target <= 3)"),
        ("(b) median-length sentence alone, idle (median of 10)", {"p50_ms": b["idle_median_sentence_ms"]}, ""),
        ("(b) 99th-percentile-length sentence alone, idle (median of 10)", {"p50_ms": b["idle_p99_length_sentence_ms"]},
         f"{b['idle_p99_length_sentence_ms'] / b['idle_median_sentence_ms']:.1f}x the median sentence"),
        ]  # fmt: skip
    if c:
        rows += [
        ("(c) embedding alone, idle", {"p50_ms": c["idle_p50_ms"], "p99_ms": c["idle_p99_ms"]}, ""),
        (f"(c) embedding, translator saturated ({c['n']} sequential)", c, "target p99 <= 50 ms"),
        ]  # fmt: skip
    for name, r, other in rows:
        fails = f"; {r['failed']} failed {r['failed_statuses']}" if r.get("failed") else ""
        cells = "".join(f"{r.get(k, float('nan')):>9.1f}" for k in ("p50_ms", "p99_ms", "max_ms"))
        print(f"{name:<58}{cells}  {other}{fails}")
    print(json.dumps({"bench": "serving", "root": str(args.root), "env": args.env, "front": args.front, "load_avg_start": load0,
                      "http_efficiency": a, "open_loop": b, "embeddings": c}))  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0, help="the server's port (0: a free one)")
    p.add_argument("--root", type=Path, default=ROOT, help="checkout whose service runs (before/after comparisons)")
    p.add_argument("--python", default=os.environ.get("RENDITION_TEST_VENV") and f"{os.environ['RENDITION_TEST_VENV']}/bin/python",
                   help="the interpreter of an installed package whose server runs (scripts/installed-venv.sh DIR:"
                        " DIR/venv/bin/python; default: $RENDITION_TEST_VENV's); without it, --root's tree")  # fmt: skip
    p.add_argument("--workers", type=int, default=None, help="RENDITION_TRANSLATION_WORKERS for the server")
    p.add_argument("--threads", type=int, default=None, help="RENDITION_WORKER_THREADS for the server")
    p.add_argument(
        "--env",
        nargs="+",
        dest="env_pairs",
        default=[],
        metavar="NAME=VALUE",
        help="more server settings, e.g. RENDITION_TORCH_THREADS=1",
    )
    p.add_argument("--n", type=int, default=256, help="(a) requests")
    p.add_argument("--rounds", type=int, default=3, help="(a) runs of each side, taking turns (each side's fastest counts)")
    p.add_argument("--reference", choices=["scheduler", "core"], default="scheduler",
                   help="(a) in-process: the scheduler at the server's layout, or one batch search")  # fmt: skip
    p.add_argument("--client", choices=["raw", "httpx"], default="raw",
                   help="(a) the load generator: lean keep-alive HTTP/1.1 (loadgen.raw_closed_loop) or httpx")  # fmt: skip
    p.add_argument("--front", choices=["service", "floor"], default="service",
                   help="the server: the service, or the floor under (a): the service behind the least a Python"
                        " front can do for /v1/translate (benchmarks/floor_front.py)")  # fmt: skip
    p.add_argument("--in-flight", type=int, default=64, help="concurrent translation requests in (a), (b) and (c)")
    p.add_argument("--capacity-seconds", type=float, default=20.0, help="(b) the saturating run")
    p.add_argument("--seconds", type=float, default=30.0, help="(b) arrivals per load level")
    p.add_argument("--embeddings", type=int, default=200, help="(c) sequential embedding requests under load")
    p.add_argument("--parts", default="abc", help="the parts to run, e.g. ac (default all: abc)")
    p.add_argument("--quick", action="store_true", help="smoke run: n 32, 16 in flight, 5 s runs, 20 embeddings")
    args = p.parse_args()
    if args.quick:
        args.n, args.in_flight, args.capacity_seconds, args.seconds, args.embeddings = 32, 16, 5.0, 5.0, 20
    args.env = {name: str(v) for name, v in (("RENDITION_TRANSLATION_WORKERS", args.workers),
                                             ("RENDITION_WORKER_THREADS", args.threads)) if v is not None}  # fmt: skip
    args.env |= dict(kv.split("=", 1) for kv in args.env_pairs)
    load0 = os.getloadavg()[0]
    texts = test_sentences(n=args.n)
    with serve(args.root, args.port, args.env, args.python, front=args.front) as url:
        a = b = c = {}
        if "a" in args.parts:
            reference = (args.reference, args.workers or 0, args.threads or 0)
            a = progress("a", http_efficiency(url, texts, args.in_flight, reference, rounds=args.rounds, client=args.client))
        if "b" in args.parts:
            b = progress("b", open_loop(url, mixed_pool(), args.in_flight, args.capacity_seconds, args.seconds))
        if "c" in args.parts:
            c = progress("c", asyncio.run(embeddings_under_load(url, texts, args.in_flight, args.embeddings)))
    report(args, a, b, c, load0)


if __name__ == "__main__":
    main()
