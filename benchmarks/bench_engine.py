"""Library throughput of the serving engine: ours at each thread layout vs CTranslate2 at each of its own.

    python benchmarks/bench_engine.py [--n 1000] [--rounds 2] [--only ct2-2x1 sched-2x1 ...]
    python benchmarks/bench_engine.py --quick          # smoke run: 100 sentences, 1 round
    python benchmarks/bench_engine.py --baseline DIR --only core sched-1x2 sched-2x1   # this tree vs another

Workload: the first ``--n`` English sentences of the DDTP test split (``data/splits/test.en-fr.tsv``,
unseen in training) translated to French with beam 4, length penalty 0 (both engines then stop on
the same rule), the library's length caps (``TranslationOptions``: min(256, 1.5 x source + 10)), on the
shipped translator and the same weights exported to CTranslate2 (``export_ct2``, float32).

Configurations (``--only`` takes their keys):

* ``ct2-IxJ``: CTranslate2 with ``inter_threads=I`` workers of ``intra_threads=J`` threads, I, J in
  {1, 2}.  ``translate_batch`` with ``max_batch_size`` in tokens cuts the input into batches and
  queues them to its workers (CTranslate2's documented way to keep several workers busy, see its
  docs/parallel.md); the budget is ours (8,192 padded tokens x beam, i.e. 2,048 source tokens per
  batch), cut smaller when needed so that every worker gets at least two batches;
* ``ct2mkl-IxJ``: the same with ``CT2_USE_MKL=1`` (CTranslate2's documented switch): on a CPU that is
  not Intel's it otherwise multiplies with oneDNN, and MKL's packed sgemm may be faster there (on
  Intel CPUs MKL is its default, so the two rows are the same engine);
* ``core``: ``Translator.core(sources, TranslationOptions(...))`` on 2 torch threads, the batch path
  the service used before the step-level scheduler (sorted by length, batches under the same budget, each run to
  completion);
* ``sched-WxT``: ``TranslationScheduler(translator.backend, workers=W, threads=T)``, the step-level
  continuous-batching scheduler the service uses, at 1x2 and 2x1.

``--baseline DIR`` (another checkout of this repository, its native kernels built in place, e.g. a
``git worktree`` of the previous commit): each of ``core`` / ``sched-WxT`` also runs as
``base:core`` / ``base:sched-WxT`` from DIR's ``model`` package (same interpreter, same torch), in
the same rounds, and each row of this tree gets ``vs base``: its tokens/s over the baseline's
(>= 1: no slower), and how many best hypotheses are those of the baseline.

Each configuration lives in a process of its own (``bench_translate.EngineProcess``), asked for one
measurement at a time, so engines never run at once and never share a thread pool.  The
configurations take turns for ``--rounds`` rounds; each row is the configuration's best round.
Output tokens are counted the same way for both engines: the best hypothesis's tokens plus one
``</s>`` per sentence (emitted, or forced by ours at the length cap).  Each row also says how many
best hypotheses are token for token those of ``core`` (the scheduler should match all; CTranslate2
differs in float rounding only).  One table, then one JSON line.
"""

from __future__ import annotations

import argparse
import atexit
import csv
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
# The tree whose ``model`` package this process runs: this one, or (a ``base:`` configuration's
# process, see --baseline) the baseline's, set by the parent before it starts the process.
TREE = Path(os.environ.get("RENDITION_BENCH_TREE") or ROOT)
sys.path.insert(0, str(TREE))  # (nothing here imports bench_translate, which puts this tree first)

from model.translation.ct2 import CT2Engine, export_ct2  # noqa: E402
from model.translation.translator import DEFAULT_TRANSLATOR, Translator  # noqa: E402

try:
    from model.translation.options import TranslationOptions  # noqa: E402
except ImportError:  # a baseline tree from before TranslationOptions
    from model.translation.search import SearchOptions as TranslationOptions  # noqa: E402

SPLITS = ROOT / "data" / "splits"
BEAM = 4
BATCH_TOKENS = 16384  # padded tokens x beam per batch: Translator's and the service's default budget (CTranslate2 measured the same at 8,192-32,768)
CT2_LAYOUTS = ["1x1", "1x2", "2x1", "2x2"]
CONFIGS = [f"ct2-{x}" for x in CT2_LAYOUTS] + [f"ct2mkl-{x}" for x in CT2_LAYOUTS] + ["core", "sched-1x2", "sched-2x1"]


def _serve(factory, params: tuple, conn) -> None:
    """The configuration's process: build ``factory(*params)``, answer ``(method, args)`` messages."""
    bench = factory(*params)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        name, args = msg
        conn.send(getattr(bench, name)(*args))


class EngineProcess:
    """One configuration in a spawned process of its own (``bench_translate.EngineProcess``'s
    protocol, defined here so that a baseline tree's process imports nothing of this tree):
    ``proc("method", *args)`` answers ``bench.method(*args)``."""

    def __init__(self, factory, *params):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(factory, params, child), daemon=True)
        self.proc.start()
        if self.conn.recv() != "ready":
            raise RuntimeError(f"{factory.__name__}{params[:1]} benchmark process failed to start")

    def __call__(self, name: str, *params):
        time.sleep(0.3)  # let the other process's threads settle
        self.conn.send((name, params))
        return self.conn.recv()

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join()


def test_sentences(split: str = "test.en-fr.tsv", n: int | None = None) -> list[str]:
    """The first ``n`` English sides of a committed split (all of them for None)."""
    with open(SPLITS / split, newline="") as f:
        rows = [row[0] for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    if n is not None and len(rows) < n:
        raise SystemExit(f"{split} has {len(rows)} sentences, fewer than {n}")
    return rows[:n]


BASE = "base:"  # a configuration of the baseline tree (--baseline)
OURS = ["core", "sched-1x2", "sched-2x1"]  # the configurations a baseline tree also runs


def layout(key: str) -> tuple[str, int, int]:
    """``"ct2-2x1"`` -> ("ct2", 2, 1); ``"core"`` -> ("core", 1, 2); ``"base:sched-2x1"`` -> ("sched", 2, 1)."""
    kind, _, shape = key.removeprefix(BASE).partition("-")
    workers, threads = map(int, shape.split("x")) if shape else (1, 2)
    return kind, workers, threads


class ConfigBench:
    """One configuration, inside its own process: ``run()`` translates all sources once, timed."""

    def __init__(self, key: str, n: int, ct2_dir: Path | None):
        self.kind, self.workers, self.threads = layout(key)
        if self.kind == "sched":  # loaded on one thread; the workers set their own (scheduler.worker_layout)
            torch.set_num_threads(1)
        self.translator = Translator.from_pretrained(DEFAULT_TRANSLATOR, device="cpu")
        self.sources = self.translator.preprocess(test_sentences(n=n), "fr")
        if self.kind in ("ct2", "ct2mkl"):
            if self.kind == "ct2mkl":  # read once, when CTranslate2 first multiplies: set before it loads a model
                os.environ["CT2_USE_MKL"] = "1"
            else:  # CTranslate2's own choice (MKL on Intel CPUs, oneDNN on others)
                os.environ.pop("CT2_USE_MKL", None)
            total = sum(map(len, self.sources))
            per_batch = max(1, min(BATCH_TOKENS // BEAM, total // (2 * self.workers)))  # source tokens per batch
            self.ct2 = CT2Engine(
                ct2_dir, self.translator.tokenizer.pieces(), device="cpu", compute_type="float32",
                threads=self.threads, inter_threads=self.workers, max_batch_tokens=per_batch * BEAM,
            )  # fmt: skip
        else:
            torch.set_num_threads(self.threads)
        if self.kind == "sched":  # one long-lived scheduler, as in the service (and as CTranslate2's Translator)
            from model.translation.scheduler import TranslationScheduler

            self.sched = TranslationScheduler(self.translator.backend, workers=self.workers, threads=self.threads)
        self.run(self.sources[:16])  # warm-up

    @staticmethod
    def tree() -> str:
        """The checkout whose ``model`` package this process runs."""
        import model

        return str(Path(model.__file__).resolve().parents[1])

    def run(self, sources: list[list[int]] | None = None) -> tuple[float, list[list[int]]]:
        """(wall seconds, best hypothesis tokens per sentence) of one pass over ``sources`` (default:
        all).  The scheduler's workers live as long as the process, like CTranslate2's (its storage
        stays allocated between passes, as in the service); idle, they wait on a condition variable."""
        sources = self.sources if sources is None else sources
        opts = TranslationOptions(beam_size=BEAM, length_penalty=0.0)
        translate = {"ct2": lambda: self.ct2.core, "ct2mkl": lambda: self.ct2.core, "core": lambda: self.translator.core, "sched": lambda: self.sched.run}[self.kind]()
        t0 = time.perf_counter()
        hyps = translate(sources, opts)
        seconds = time.perf_counter() - t0
        return seconds, [h[0].tokens for h in hyps]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000, help="sentences from the DDTP test split")
    p.add_argument("--rounds", type=int, default=2, help="rounds, configurations in turns; best round reported")
    p.add_argument("--only", nargs="+", choices=CONFIGS, default=CONFIGS, help="configurations to run")
    p.add_argument("--quick", action="store_true", help="smoke run: 100 sentences, 1 round")
    p.add_argument(
        "--baseline", type=Path, default=None, metavar="DIR",
        help="another checkout (kernels built in place): its core / sched-WxT run beside this tree's, in the same rounds",
    )  # fmt: skip
    args = p.parse_args()
    if args.quick:
        args.n, args.rounds = 100, 1
    keys = list(args.only)
    if args.baseline is not None:
        if not (args.baseline / "model" / "translation" / "scheduler.py").is_file():
            p.error(f"--baseline {args.baseline}: not a checkout of this repository")
        keys += [BASE + k for k in args.only if k in OURS]

    tmp = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    ct2_dir = export_ct2(DEFAULT_TRANSLATOR, tmp / "ct2") if any(k.startswith("ct2") for k in keys) else None
    procs = {}
    for key in keys:
        if key.startswith(BASE):  # (a spawned process inherits the environment as it is at its start)
            os.environ["RENDITION_BENCH_TREE"] = str(args.baseline.resolve())
        try:
            procs[key] = EngineProcess(ConfigBench, key, args.n, ct2_dir)
        finally:
            os.environ.pop("RENDITION_BENCH_TREE", None)
    trees = {key: proc("tree") for key, proc in procs.items()}
    times: dict[str, list[float]] = {key: [] for key in keys}
    outputs: dict[str, list[list[int]]] = {}
    load0 = os.getloadavg()[0]
    for _ in range(args.rounds):
        for key, proc in procs.items():
            seconds, outputs[key] = proc("run")
            times[key].append(seconds)
    for proc in procs.values():
        proc.close()

    import ctranslate2

    print(f"# bench_engine  {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores; torch {torch.__version__},"
        f" ctranslate2 {ctranslate2.__version__}; load average at start {load0:.2f}"
    )
    print(
        f"workload: {args.n} DDTP test sentences en->fr, beam {BEAM}, length penalty 0; shipped translator;"
        f" one process per configuration; best of {args.rounds} rounds taken in turns"
    )
    if args.baseline is not None:
        base_trees = sorted({t for k, t in trees.items() if k.startswith(BASE)})
        ours = sorted({t for k, t in trees.items() if not k.startswith(BASE)})
        print(f"trees: this one {', '.join(ours)}; baseline ({BASE}* rows) {', '.join(base_trees)}; vs base = tokens/s over the baseline's")
    rows = {}
    for key in keys:
        tokens = sum(len(t) + 1 for t in outputs[key])  # + </s>, emitted or forced, for both engines
        best = min(times[key])
        same = sum(a == b for a, b in zip(outputs[key], outputs["core"])) if "core" in outputs else None
        rows[key] = {"seconds": round(best, 3), "rounds_s": [round(t, 3) for t in times[key]], "tokens": tokens,
                     "tokens_per_s": round(tokens / best, 1), "sentences_per_s": round(args.n / best, 1),
                     "same_as_core": same}  # fmt: skip
    for key, r in rows.items():
        base = rows.get(BASE + key)
        if base is not None:
            r["vs_base"] = round(r["tokens_per_s"] / base["tokens_per_s"], 3)
            r["same_as_base"] = sum(a == b for a, b in zip(outputs[key], outputs[BASE + key]))
    ct2_best = max((r["tokens_per_s"] for k, r in rows.items() if k.startswith("ct2")), default=None)
    print(
        f"{'configuration':<19}{'best s':>9}{'tokens':>8}{'tokens/s':>10}{'sent/s':>9}{'vs ct2 best':>13}{'same as core':>14}"
        f"{'vs base':>9}{'same as base':>14}"
    )
    for key, r in rows.items():
        r["vs_ct2_best"] = round(r["tokens_per_s"] / ct2_best, 3) if ct2_best else None
        ratio = f"{r['vs_ct2_best']:.2f}" if ct2_best else "-"
        same = f"{r['same_as_core']}/{args.n}" if r["same_as_core"] is not None else "-"
        vs_base = f"{r['vs_base']:.3f}" if "vs_base" in r else "-"
        same_base = f"{r['same_as_base']}/{args.n}" if "same_as_base" in r else "-"
        print(
            f"{key:<19}{r['seconds']:>9.2f}{r['tokens']:>8}{r['tokens_per_s']:>10.1f}{r['sentences_per_s']:>9.1f}"
            f"{ratio:>13}{same:>14}{vs_base:>9}{same_base:>14}"
        )
    print(json.dumps({"bench": "engine", "n": args.n, "rounds": args.rounds, "beam": BEAM, "load_avg_start": load0,
                      "baseline": str(args.baseline.resolve()) if args.baseline else None, "trees": trees,
                      "ct2_best_tokens_per_s": ct2_best, "configs": rows}))  # fmt: skip


if __name__ == "__main__":
    main()
