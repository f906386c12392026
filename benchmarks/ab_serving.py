"""Variants of the service side by side: alternate rounds of ``bench_serving.py``'s (a) closed loop
against two or more servers, and each variant's medians.

    python benchmarks/ab_serving.py --rounds 10 base: nice:RENDITION_WORKER_NICE=5
    python benchmarks/ab_serving.py --rounds 10 before@../other-checkout: after:
    python benchmarks/ab_serving.py --python build/installed/venv/bin/python a: b:RENDITION_MAX_BATCH_SIZE=64

A variant is ``NAME[@DIR]:[NAME=VALUE,...]``: the server of this checkout, or of the checkout at
``DIR`` (``bench_serving.serve``'s ``--root``; its native kernels built in place), with those
environment variables (settings, or switches a patch under test reads).  With ``--python`` every
variant runs that installed package's server instead (``@DIR`` is then refused).

All the servers start first and stay up.  Each round sends ``--n`` (256) one-sentence
``POST /v1/translate`` requests, ``--in-flight`` (64) at a time from the lean client, to each server
in turn, the order reversed every other round, so that a slow spell of the machine hits the
variants alike.  Per run: its seconds; the event loop thread's CPU per request and its voluntary
and involuntary context switches per request; the workers' core-seconds on a core, waiting for one
and asleep (``bench_serving.worker_times``; and how many threads they run); and this process's CPU per request
(the client's).
Then the medians of each variant (and the mean of the seconds), and one JSON line.  Compare the
variants of one run only: between runs the machine swings by 5-10%.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "scripts"))

import bench_serving  # noqa: E402
import loadgen  # noqa: E402
from bench_engine import test_sentences  # noqa: E402

FIGURES = (
    "seconds",
    "loop_ms_per_request",
    "loop_voluntary",
    "loop_involuntary",
    "on_core",
    "waiting",
    "asleep",
    "client_ms_per_request",
)


@dataclass(frozen=True)
class Variant:
    name: str
    root: Path
    env: dict[str, str] = field(default_factory=dict)


def parse_variant(text: str) -> Variant:
    """``NAME[@DIR]:[NAME=VALUE,...]`` -> a ``Variant`` (``ValueError`` naming what is wrong)."""
    head, colon, rest = text.partition(":")
    if not colon:
        raise ValueError(f"{text!r}: a variant is NAME[@DIR]:[NAME=VALUE,...] (the colon is missing)")
    name, _, root = head.partition("@")
    if not name:
        raise ValueError(f"{text!r}: the variant has no name")
    env = {}
    for pair in filter(None, rest.split(",")):
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ValueError(f"{text!r}: {pair!r} is not NAME=VALUE")
        env[key] = value
    return Variant(name, Path(root).resolve() if root else bench_serving.ROOT, env)


def loop_switches(pid: int) -> tuple[int, int]:
    """Voluntary and involuntary context switches so far of process ``pid``'s main thread (its event loop)."""
    fields = dict(
        line.split(":\t") for line in Path(f"/proc/{pid}/task/{pid}/status").read_text().splitlines() if ":\t" in line
    )
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def one_run(url: str, texts: list[str], in_flight: int) -> dict[str, float]:
    """``texts`` as one-sentence requests, ``in_flight`` at a time, and what the run cost."""
    pid = bench_serving.SERVER_PIDS[url]
    n = len(texts)
    loop0, switches0, workers0 = (
        bench_serving.loop_cpu_seconds(url),
        loop_switches(pid),
        bench_serving.worker_schedstat(pid),
    )
    client0 = time.process_time()
    result = loadgen.run(
        loadgen.raw_closed_loop(
            url,
            body=lambda i: bench_serving.translate_body(texts[i]),
            concurrency=in_flight,
            max_requests=n,
            timeout=300,
        )
    )
    client = time.process_time() - client0
    loop, switches = bench_serving.loop_cpu_seconds(url) - loop0, loop_switches(pid)
    answered = bench_serving.latencies(result)
    if answered["failed"]:
        raise SystemExit(
            f"{answered['failed']} of {n} requests failed ({answered['failed_statuses']}): the variants must serve every request to compare"
        )
    workers1 = bench_serving.worker_schedstat(pid)
    workers = bench_serving.worker_times(workers0, workers1, result.seconds)
    return {
        "worker_threads": len(workers1),
        "seconds": round(result.seconds, 3),
        "loop_ms_per_request": round(loop / n * 1e3, 3),
        "loop_voluntary": round((switches[0] - switches0[0]) / n, 2),
        "loop_involuntary": round((switches[1] - switches0[1]) / n, 2),
        **{k: workers.get(k, float("nan")) for k in ("on_core", "waiting", "asleep")},
        "client_ms_per_request": round(client / n * 1e3, 3),
    }


def compare(
    variants: list[Variant], rounds: int, n: int, in_flight: int, python: str | None = None, echo=print
) -> dict:
    """Every variant's runs and medians (``echo``: told of each run as it ends)."""
    texts = test_sentences(n=n)
    runs: dict[str, list[dict[str, float]]] = {v.name: [] for v in variants}
    with contextlib.ExitStack() as stack:
        urls = {v.name: stack.enter_context(bench_serving.serve(v.root, 0, v.env, python)) for v in variants}
        for url in urls.values():  # warm-up: every server has answered a full closed loop once
            one_run(url, texts[: max(in_flight, 1)], in_flight)
        for r in range(rounds):
            for name in list(urls) if r % 2 == 0 else list(urls)[::-1]:
                run = one_run(urls[name], texts, in_flight)
                runs[name].append(run)
                echo(f"round {r + 1} {name}: " + "  ".join(f"{k} {v}" for k, v in run.items()))
    medians = {
        name: {k: round(statistics.median(run[k] for run in got), 3) for k in FIGURES} for name, got in runs.items()
    }
    for name, got in runs.items():
        medians[name]["mean_seconds"] = round(statistics.mean(run["seconds"] for run in got), 3)
    return {"rounds": rounds, "n": n, "in_flight": in_flight, "medians": medians, "runs": runs,
            "variants": {v.name: {"root": str(v.root), "env": v.env} for v in variants}}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variants", nargs="+", metavar="NAME[@DIR]:[NAME=VALUE,...]", help="two or more server variants")
    p.add_argument("--rounds", type=int, default=10, help="rounds (each variant runs once per round)")
    p.add_argument("--n", type=int, default=256, help="requests per run")
    p.add_argument("--in-flight", type=int, default=64, help="requests in flight")
    p.add_argument(
        "--python", default=None, help="the interpreter of an installed package whose server every variant runs"
    )
    args = p.parse_args(argv)
    try:
        variants = [parse_variant(v) for v in args.variants]
    except ValueError as e:
        p.error(str(e))
    if len(variants) < 2 or len({v.name for v in variants}) != len(variants):
        p.error("give two or more variants, each with a name of its own")
    if args.python and any(v.root != bench_serving.ROOT for v in variants):
        p.error("--python runs the installed package's server: a variant cannot name another checkout (@DIR)")
    print(
        f"# ab_serving  {time.strftime('%Y-%m-%d %H:%M:%S')}  {os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.2f}"
    )
    out = compare(variants, args.rounds, args.n, args.in_flight, args.python)  # (serve makes the path absolute)
    labels = ("s", "loop ms", "loop vol", "loop invol", "on core", "waiting", "asleep", "client ms", "mean s")
    width = max(len(name) for name in out["medians"]) + 2
    print(
        f"medians of {args.rounds} rounds, {args.n} requests, {args.in_flight} in flight (per request: loop CPU, context switches, client CPU; workers: core-seconds)"
    )
    print(" " * width + "".join(f"{label:>11}" for label in labels))
    for name, m in out["medians"].items():
        print(f"{name:<{width}}" + "".join(f"{m[k]:>11}" for k in (*FIGURES, "mean_seconds")))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
