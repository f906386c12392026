"""Library throughput of the serving engine: ours (float32 and int8) at each thread layout vs
CTranslate2 (float32 and int8) at each of its own, side by side in one run, on two test sets.

    python benchmarks/bench_engine.py                  # the full comparison (about an hour on 2 cores)
    python benchmarks/bench_engine.py --quick          # smoke run: 100 sentences, 1 round
    python benchmarks/bench_engine.py --n 20 --rounds 1 --only ct2i8-1x2 sched8-1x2   # a few rows
    python benchmarks/bench_engine.py --with-mkl       # also CTranslate2 float32 with CT2_USE_MKL=1
    python benchmarks/bench_engine.py --baseline main --only core sched-2x1   # this tree's engine vs main's

Workloads (``--sets``; each row is measured on each): the first ``--n`` English sentences of the
DDTP test split (``ddtp``: ``data/splits/test.en-fr.tsv``) and of the everyday test split
(``everyday``: ``test.everyday.en-fr.tsv``: dialogue lines and short UI sentences), unseen in
training, translated to French with beam 4, length penalty 0 (both engines then stop on the same
rule), the library's length caps (``TranslationOptions``: min(256, 2.0 x source + 10)), on the shipped
translator and the same weights exported to CTranslate2 (``export_ct2``, float32 on disk; CTranslate2
quantises them itself at load for ``compute_type="int8"``).

Configurations (``--only`` takes their keys), every layout I x J with I, J in {1, 2}:

* ``ct2-IxJ``: CTranslate2 float32 with ``inter_threads=I`` workers of ``intra_threads=J`` threads.
  ``translate_batch`` with ``max_batch_size`` in tokens cuts the input into batches and queues them
  to its workers (CTranslate2's documented way to keep several workers busy, see its
  docs/parallel.md); the budget is ours (16,384 padded tokens x beam, i.e. 4,096 source tokens per
  batch), cut smaller when needed so that every worker gets at least two batches;
* ``ct2i8-IxJ``: CTranslate2 with ``compute_type="int8"`` (its recommended CPU mode), batches in
  tokens as above; ``ct2i8ex-IxJ``: the same with batches in examples (``batch_type="examples"``,
  ``max_batch_size`` 32 sentences, CTranslate2's command-line default, cut smaller when needed so
  that every worker gets at least two batches);
* ``ct2mkl-IxJ`` (``--with-mkl``): float32 with ``CT2_USE_MKL=1`` (CTranslate2's documented
  switch): on a CPU that is not Intel's it otherwise multiplies with oneDNN, and MKL's packed sgemm
  may be faster there (on Intel CPUs MKL is its default, so the two rows are the same engine);
* ``core``: ``Translator.core(sources, TranslationOptions(...))`` on 2 torch threads (sorted by length,
  batches under the same budget, each run to completion);
* ``sched-WxT``: ``TranslationScheduler(translator.backend, workers=W, threads=T)``, the step-level
  continuous-batching scheduler the service uses;
* ``core8``, ``sched8-WxT``: the same with our int8 compute type
  (``Translator.from_pretrained(compute_type="int8")``);
* ``core8sl``, ``sched8sl-WxT``: int8 with the vocabulary shortlist (``--shortlist``, by default the
  model directory's ``shortlist.safetensors``; ``rendition build-shortlist``), each sentence's logits
  over its own candidates only; ``ct2i8sl-IxJ``: CTranslate2 int8 with ``use_vmap`` over the same
  shortlist exported as its vocabulary map (the union of a batch's candidates).  Their ``same as
  core`` compares with ``core8``.

``--baseline REF`` (a git ref: a commit, branch or tag of this repository): REF's tree is checked
out into a temporary ``git worktree`` (removed at exit) and its native kernels built in place (or
copied from this tree when their sources and setup.py are the same); each of our configurations that
runs (``core``, ``sched-WxT``, ``core8``, ``sched8-WxT``) also runs as ``base:KEY`` on that tree's
engine, with the same sentences, model files and settings, taking its turn right after this tree's
in every round.  Each of this tree's rows then gets ``vs base`` (its tokens/s over the baseline
row's: above 1, this tree is faster) and how many best hypotheses are those of the baseline.  A tree
from before the installed ``rendition.*`` layout (whose code imports ``model.*``) runs too; one
older than a feature a configuration needs (int8, the scheduler) says so and stops.

Each configuration lives in a process of its own (``engine_process.EngineProcess``), asked for one
measurement at a time, so engines never run at once and never share a thread pool.  The
configurations take turns for ``--rounds`` rounds; each row is the configuration's best round.
Output tokens are counted the same way for both engines: the best hypothesis's tokens plus one
``</s>`` per sentence (emitted, or forced by ours at the length cap).  Each row also says how many
best hypotheses are token for token those of its own compute type's ``core`` (the scheduler should
match all; CTranslate2 differs in float rounding only), its speed against CTranslate2's best
float32 and best int8 rows, and the corpus BLEU (sacrebleu) of its outputs against the split's
French references.  Per set, one table and a summary line (ours-int8 best / CTranslate2-int8
best); then one JSON line with everything.
"""

from __future__ import annotations

import argparse
import atexit
import csv
import importlib.util
import inspect
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from engine_process import EngineProcess, tempdir  # noqa: E402  (imports nothing of the project)

BASELINE_ENV = "RENDITION_BENCH_BASELINE"  # set for a baseline configuration's process: the tree it runs


class _BaselineTree:
    """A meta path finder for a baseline configuration's process (``--baseline``): ``rendition.model``
    and ``rendition.service`` are another checkout's folders.  A tree from before the installed
    ``rendition.*`` layout imports itself as ``model.*``: that tree also goes first on sys.path."""

    def __init__(self, tree: Path):
        self.tree = tree
        if "rendition.model" not in (tree / "model" / "translation" / "translator.py").read_text():
            sys.path.insert(0, str(tree))

    def find_spec(self, name: str, path=None, target=None):
        if name not in ("rendition.model", "rendition.service"):
            return None  # (their submodules are found in their folders)
        folder = self.tree / name.partition(".")[2]
        return importlib.util.spec_from_file_location(name, folder / "__init__.py", submodule_search_locations=[str(folder)])


if os.environ.get(BASELINE_ENV):  # before anything imports the project
    sys.meta_path.insert(0, _BaselineTree(Path(os.environ[BASELINE_ENV])))

from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator  # noqa: E402

try:
    from rendition.model.translation.options import TranslationOptions  # noqa: E402
except ImportError:  # a baseline tree from before TranslationOptions
    from rendition.model.translation.search import SearchOptions as TranslationOptions  # noqa: E402

SPLITS = ROOT / "data" / "splits"
SETS = {"ddtp": "test.en-fr.tsv", "everyday": "test.everyday.en-fr.tsv"}  # --sets: name -> split file
BEAM = 4
BATCH_TOKENS = 16384  # padded tokens x beam per batch: Translator's and the service's default budget (CTranslate2 measured the same at 8,192-32,768)
LAYOUTS = ["1x1", "1x2", "2x1", "2x2"]
EXAMPLES_PER_BATCH = 32  # ct2i8ex: sentences per batch (CTranslate2's command-line default)
CT2_KINDS = {
    "ct2": ("float32", "tokens"), "ct2mkl": ("float32", "tokens"), "ct2i8": ("int8", "tokens"), "ct2i8ex": ("int8", "examples"),
    "ct2i8sl": ("int8", "tokens"),
}  # fmt: skip
OURS_INT8 = ("core8", "sched8", "core8sl", "sched8sl")
OURS = ("core", "sched", "core8", "sched8")  # the kinds a baseline tree runs too (--baseline)
SHORTLIST_KINDS = ("core8sl", "sched8sl", "ct2i8sl")  # with the vocabulary shortlist
BASE = "base:"  # a configuration run on the baseline tree's engine
CONFIGS = (
    [f"ct2-{x}" for x in LAYOUTS] + [f"ct2i8-{x}" for x in LAYOUTS] + [f"ct2i8ex-{x}" for x in LAYOUTS]
    + ["core"] + [f"sched-{x}" for x in LAYOUTS] + ["core8"] + [f"sched8-{x}" for x in LAYOUTS]
    + ["core8sl"] + [f"sched8sl-{x}" for x in LAYOUTS] + [f"ct2i8sl-{x}" for x in LAYOUTS]
)  # fmt: skip
MKL_CONFIGS = [f"ct2mkl-{x}" for x in LAYOUTS]


def test_sentences(split: str = "test.en-fr.tsv", n: int | None = None, side: int = 0) -> list[str]:
    """The first ``n`` English sides (``side=1``: French) of a committed split (all of them for None)."""
    with open(SPLITS / split, newline="") as f:
        rows = [row[side] for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    if n is not None and len(rows) < n:
        raise SystemExit(f"{split} has {len(rows)} sentences, fewer than {n}")
    return rows[:n]


class _ExampleBatches:
    """A ``ctranslate2.Translator`` whose ``translate_batch`` cuts batches of ``size`` sentences
    (``batch_type="examples"``) instead of the token budget ``CT2Engine.core`` asks for."""

    def __init__(self, translator, size: int):
        self.translator, self.size = translator, size

    def translate_batch(self, *args, **kwargs):
        return self.translator.translate_batch(*args, **{**kwargs, "batch_type": "examples", "max_batch_size": self.size})


def layout(key: str) -> tuple[str, int, int]:
    """``"ct2-2x1"`` -> ("ct2", 2, 1); ``"core"`` -> ("core", 1, 2); ``"base:sched-2x1"`` -> ("sched", 2, 1)."""
    kind, _, shape = key.removeprefix(BASE).partition("-")
    workers, threads = map(int, shape.split("x")) if shape else (1, 2)
    return kind, workers, threads


def checkout_baseline(ref: str, tmp: Path) -> tuple[Path, str]:
    """(the tree, its commit): ``ref`` checked out into a ``git worktree`` under ``tmp`` (removed at
    exit), its native kernels built in place as ``pip install -e .`` builds them (copied from this
    tree when their sources and setup.py are the same)."""
    git = ["git", "-C", str(ROOT)]
    found = subprocess.run([*git, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], capture_output=True, text=True)
    if found.returncode:
        raise SystemExit(f"--baseline {ref}: not a commit of this repository")
    commit, tree = found.stdout.strip(), tmp / "baseline"
    subprocess.run([*git, "worktree", "add", "--detach", "--quiet", str(tree), commit], check=True)
    atexit.register(subprocess.run, [*git, "worktree", "remove", "--force", str(tree)], check=False)
    if not (tree / "model" / "translation" / "translator.py").is_file():
        raise SystemExit(f"--baseline {ref}: its tree has no model/translation/translator.py")
    same = subprocess.run([*git, "diff", "--quiet", commit, "--", "model/kernels/csrc", "setup.py"]).returncode == 0
    built = sorted((ROOT / "model" / "kernels").glob("_native_*"))
    if same and built:  # the same kernel sources and build: this tree's libraries
        for lib in built:
            shutil.copy2(lib, tree / "model" / "kernels" / lib.name)
    elif (tree / "setup.py").is_file():
        print(f"building the native kernels of {ref} ({commit[:12]}) ...", file=sys.stderr)
        build = subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, capture_output=True, text=True,
            env={**os.environ, "RENDITION_REQUIRE_NATIVE": "1"},
        )  # fmt: skip
        if build.returncode:
            raise SystemExit(f"--baseline {ref}: its native kernels did not build:\n{build.stdout[-2000:]}{build.stderr[-2000:]}")
    return tree, commit


class ConfigBench:
    """One configuration, inside its own process: ``run(set)`` translates that set's sources once, timed."""

    def __init__(self, key: str, n: int, ct2_dir: Path | None, sets: list[str], model_dir: str, shortlist: str | None = None):
        self.kind, self.workers, self.threads = layout(key)
        if self.kind in ("sched", "sched8", "sched8sl"):  # loaded on one thread; the workers set their own (scheduler.worker_layout)
            torch.set_num_threads(1)
        int8 = self.kind in OURS_INT8
        if self.kind in ("core8sl", "sched8sl"):
            self.translator = Translator.from_pretrained(model_dir, device="cpu", compute_type="int8", shortlist=shortlist)
        elif "compute_type" in inspect.signature(Translator.from_pretrained).parameters:
            self.translator = Translator.from_pretrained(model_dir, device="cpu", compute_type="int8" if int8 else "float32")
        elif int8:  # (a baseline tree from before compute types)
            raise SystemExit(f"{key}: this tree has no int8 compute type")
        else:
            self.translator = Translator.from_pretrained(model_dir, device="cpu")
        if int8 and self.translator.compute_type != "int8":
            raise SystemExit(f"{key}: the int8 compute type cannot run here")
        self.sources = {name: self.translator.preprocess(test_sentences(SETS[name], n=n), "fr") for name in sets}
        if self.kind in CT2_KINDS:
            if self.kind == "ct2mkl":  # read once, when CTranslate2 first multiplies: set before it loads a model
                os.environ["CT2_USE_MKL"] = "1"
            else:  # CTranslate2's own choice (MKL on Intel CPUs, oneDNN on others)
                os.environ.pop("CT2_USE_MKL", None)
            from rendition.model.export.ct2 import CT2Engine

            compute_type, self.batch_type = CT2_KINDS[self.kind]
            vmap = self.kind in SHORTLIST_KINDS
            self.ct2 = CT2Engine(
                ct2_dir / ("ct2sl" if vmap else "ct2"), self.translator.tokenizer.pieces(), device="cpu",
                compute_type=compute_type, threads=self.threads, inter_threads=self.workers, max_batch_tokens=BATCH_TOKENS,
                **({"use_vmap": True} if vmap else {}),
            )  # fmt: skip
            if self.batch_type == "examples":
                self.ct2.translator = _ExampleBatches(self.ct2.translator, EXAMPLES_PER_BATCH)
        else:
            torch.set_num_threads(self.threads)
        if self.kind in ("sched", "sched8", "sched8sl"):  # one long-lived scheduler, as in the service (and as CTranslate2's Translator)
            from rendition.model.translation.scheduler import TranslationScheduler

            self.sched = TranslationScheduler(self.translator.backend, workers=self.workers, threads=self.threads)
        self._translate(next(iter(self.sources.values()))[:16])  # warm-up

    def info(self) -> dict:
        """The tree whose engine this process runs, and its back end."""
        import rendition.model

        backend = getattr(getattr(self.translator, "backend", None), "name", "-")
        return {"tree": str(Path(rendition.model.__file__).resolve().parents[1]), "backend": backend}

    def _translate(self, sources: list[list[int]]) -> list[list[int]]:
        opts = TranslationOptions(beam_size=BEAM, length_penalty=0.0)
        if self.kind in CT2_KINDS:
            if self.batch_type == "examples":  # batches of sentences, at least two per worker
                self.ct2.translator.size = max(1, min(EXAMPLES_PER_BATCH, len(sources) // (2 * self.workers)))
                hyps = self.ct2.core(sources, opts)
            else:  # batches in tokens under our budget, at least two per worker
                total = sum(map(len, sources))
                per_batch = max(1, min(BATCH_TOKENS // BEAM, total // (2 * self.workers)))  # source tokens per batch
                hyps = self.ct2.core(sources, opts, max_batch_tokens=per_batch * BEAM)
        elif self.kind in ("core", "core8", "core8sl"):
            hyps = self.translator.core(sources, opts)
        else:
            hyps = self.sched.submit(sources, opts).future.result()
        return [h[0].tokens for h in hyps]

    def run(self, name: str) -> tuple[float, list[list[int]]]:
        """(wall seconds, best hypothesis tokens per sentence) of one pass over set ``name``.  The
        scheduler's workers live as long as the process, like CTranslate2's (its storage stays
        allocated between passes, as in the service); idle, they wait on a condition variable."""
        t0 = time.perf_counter()
        out = self._translate(self.sources[name])
        return time.perf_counter() - t0, out


def table(name: str, n: int, keys: list[str], times: dict, outputs: dict, refs: list[str], tokenizer) -> dict:
    """Print one set's table and summary line; returns its rows."""
    import sacrebleu

    rows = {}
    for key in keys:
        out = outputs[key]
        tokens = sum(len(t) + 1 for t in out)  # + </s>, emitted or forced, for both engines
        best = min(times[key])
        base = BASE if key.startswith(BASE) else ""  # (a baseline row is compared with the baseline's core)
        ref_key = base + ("core8" if layout(key)[0] in OURS_INT8 else "core")
        same = sum(a == b for a, b in zip(out, outputs[ref_key])) if ref_key in outputs else None
        rows[key] = {"seconds": round(best, 3), "rounds_s": [round(t, 3) for t in times[key]], "tokens": tokens,
                     "tokens_per_s": round(tokens / best, 1), "sentences_per_s": round(n / best, 1),
                     "same_as_core": same, "same_as": ref_key,
                     "bleu": round(sacrebleu.corpus_bleu(tokenizer.decode(out), [refs]).score, 2)}  # fmt: skip
    for key, r in rows.items():  # this tree's rows against the baseline's (--baseline)
        if BASE + key in rows:
            r["vs_base"] = round(r["tokens_per_s"] / rows[BASE + key]["tokens_per_s"], 3)
            r["same_as_base"] = sum(a == b for a, b in zip(outputs[key], outputs[BASE + key]))
    with_base = any(k.startswith(BASE) for k in rows)
    width = 17 if with_base else 14

    def best(prefixes: tuple[str, ...]) -> tuple[str | None, float | None]:
        cand = {k: r["tokens_per_s"] for k, r in rows.items() if k.split("-")[0] in prefixes}
        k = max(cand, key=cand.get, default=None)
        return k, cand.get(k)

    (ct2_key, ct2_best), (ct2i8_key, ct2i8_best) = best(("ct2", "ct2mkl")), best(("ct2i8", "ct2i8ex"))
    (ours_key, ours_best), (ours8_key, ours8_best) = best(("core", "sched")), best(OURS_INT8)
    print(f"\n## {name}: {n} test sentences ({SETS[name]}) en->fr")
    print(
        f"{'configuration':<{width}}{'best s':>9}{'tokens':>8}{'tokens/s':>10}{'sent/s':>9}{'vs ct2 f32':>12}{'vs ct2 int8':>13}"
        f"{'same as core':>15}{'BLEU':>7}" + (f"{'vs base':>9}{'same as base':>14}" if with_base else "")
    )
    for key, r in rows.items():
        r["vs_ct2_best"] = round(r["tokens_per_s"] / ct2_best, 3) if ct2_best else None
        r["vs_ct2_int8_best"] = round(r["tokens_per_s"] / ct2i8_best, 3) if ct2i8_best else None
        ratio = f"{r['vs_ct2_best']:.2f}" if ct2_best else "-"
        ratio8 = f"{r['vs_ct2_int8_best']:.2f}" if ct2i8_best else "-"
        same = f"{r['same_as_core']}/{n}" if r["same_as_core"] is not None else "-"
        vs_base = f"{r['vs_base']:.3f}" if "vs_base" in r else "-"
        same_base = f"{r['same_as_base']}/{n}" if "same_as_base" in r else "-"
        print(
            f"{key:<{width}}{r['seconds']:>9.2f}{r['tokens']:>8}{r['tokens_per_s']:>10.1f}{r['sentences_per_s']:>9.1f}"
            f"{ratio:>12}{ratio8:>13}{same:>15}{r['bleu']:>7.2f}" + (f"{vs_base:>9}{same_base:>14}" if with_base else "")
        )
    summary = {"ct2_best": ct2_key, "ct2_int8_best": ct2i8_key, "ours_best": ours_key, "ours_int8_best": ours8_key}
    if ours8_best and ct2i8_best:
        summary["ours_int8_vs_ct2_int8"] = round(ours8_best / ct2i8_best, 3)
        print(f"ours int8 best ({ours8_key}) / CTranslate2 int8 best ({ct2i8_key}): {ours8_best / ct2i8_best:.2f}x")
    (sl_key, sl_best), (vmap_key, vmap_best) = best(("core8sl", "sched8sl")), best(("ct2i8sl",))
    if sl_best and (vmap_best or ct2i8_best):
        other_key, other = (vmap_key, vmap_best) if vmap_best else (ct2i8_key, ct2i8_best)
        summary["ours_int8_shortlist_vs_ct2"] = round(sl_best / other, 3)
        print(f"ours int8 + shortlist best ({sl_key}) / CTranslate2 int8 best ({other_key}): {sl_best / other:.2f}x")
    if ours_best and ct2_best:
        summary["ours_float32_vs_ct2_float32"] = round(ours_best / ct2_best, 3)
        print(f"ours float32 best ({ours_key}) / CTranslate2 float32 best ({ct2_key}): {ours_best / ct2_best:.2f}x")
    if with_base:
        vs = ", ".join(f"{k} {r['vs_base']:.3f}x" for k, r in rows.items() if "vs_base" in r)
        print(f"this tree / the baseline (tokens/s): {vs}")
    return {"rows": rows, "summary": summary}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", "--sentences", type=int, default=1000, help="sentences from each test set")
    p.add_argument("--rounds", type=int, default=2, help="rounds, configurations in turns; best round reported")
    p.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS), help="test sets to translate")
    p.add_argument("--only", nargs="+", choices=CONFIGS + MKL_CONFIGS, default=None, help="configurations to run")
    p.add_argument("--with-mkl", action="store_true", help="also the ct2mkl-* rows (CT2_USE_MKL=1)")
    p.add_argument("--quick", action="store_true", help="smoke run: 100 sentences, 1 round")
    p.add_argument(
        "--shortlist", metavar="FILE", default=None,
        help="the vocabulary shortlist of the *sl rows (default: shortlist.safetensors in the model directory)",
    )  # fmt: skip
    p.add_argument(
        "--baseline", metavar="REF",
        help="a git ref (commit, branch, tag): each of our configurations also runs on that tree's engine (base:KEY "
        "rows), in the same rounds, with the same sentences, model and settings",
    )  # fmt: skip
    args = p.parse_args()
    keys = args.only or (CONFIGS + (MKL_CONFIGS if args.with_mkl else []))
    if args.quick:
        args.n, args.rounds = 100, 1

    tmp = tempdir("bench_engine_")
    base_tree, base_commit = checkout_baseline(args.baseline, tmp) if args.baseline else (None, None)
    if base_tree is not None:  # each of ours, then the baseline's, in every round
        keys = [k for key in keys for k in ([key, BASE + key] if layout(key)[0] in OURS else [key])]
    ct2_dir = None  # (its ct2/ and ct2sl/, the second with the shortlist's vocabulary map)
    if any(layout(key)[0] in CT2_KINDS for key in keys):
        from rendition.model.export.ct2 import export_ct2

        ct2_dir = tmp
        if any(layout(key)[0] in CT2_KINDS and layout(key)[0] not in SHORTLIST_KINDS for key in keys):
            export_ct2(DEFAULT_TRANSLATOR, tmp / "ct2")
        if any(layout(key)[0] in SHORTLIST_KINDS and layout(key)[0] in CT2_KINDS for key in keys):
            from rendition.model.translation.shortlist import Shortlist

            export_ct2(DEFAULT_TRANSLATOR, tmp / "ct2sl", shortlist=Shortlist.load(args.shortlist or DEFAULT_TRANSLATOR))
    def start(key: str) -> EngineProcess:
        if key.startswith(BASE):  # (a spawned process takes the environment as it is when it starts)
            os.environ[BASELINE_ENV] = str(base_tree)
        try:
            extra = (args.shortlist or True,) if layout(key)[0] in SHORTLIST_KINDS else ()
            return EngineProcess(ConfigBench, key, args.n, ct2_dir, args.sets, str(DEFAULT_TRANSLATOR), *extra)
        finally:
            os.environ.pop(BASELINE_ENV, None)

    # one configuration's process alive at a time (27 at once, each with its model, its caches and
    # 1,000 outputs per set, outgrow 24 GiB): each round starts each configuration afresh (load and
    # warm-up untimed) and runs it on every set, configurations in turns
    info: dict[str, dict] = {}
    times = {name: {key: [] for key in keys} for name in args.sets}
    outputs: dict[str, dict[str, list[list[int]]]] = {name: {} for name in args.sets}
    load0 = os.getloadavg()[0]
    for _ in range(args.rounds):
        for key in keys:
            proc = start(key)
            try:
                info.setdefault(key, proc("info"))
                for name in args.sets:
                    seconds, outputs[name][key] = proc("run", name)
                    times[name][key].append(seconds)
            finally:
                proc.close()

    try:
        import ctranslate2
    except ImportError:  # (only our engine's rows ran)
        ctranslate2 = None

    from rendition.model.tokenizer import Tokenizer

    tokenizer = Tokenizer(DEFAULT_TRANSLATOR / "sentencepiece.model")
    print(f"# bench_engine  {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores; torch {torch.__version__},"
        f" ctranslate2 {ctranslate2.__version__ if ctranslate2 else '-'}; load average at start {load0:.2f}"
    )
    print(
        f"workload: beam {BEAM}, length penalty 0; shipped translator; one process per configuration and round, one"
        f" alive at a time; best of {args.rounds} rounds taken in turns"
    )
    for tree in sorted({i["tree"] for i in info.values()}):
        runs = ", ".join(f"{k} ({i['backend']})" for k, i in info.items() if i["tree"] == tree)
        role = f"baseline {args.baseline} = {base_commit[:12]}" if base_tree is not None and tree == str(base_tree.resolve()) else "this tree"
        print(f"{role}: {tree}: {runs}")
    results = {
        name: table(name, args.n, keys, times[name], outputs[name], test_sentences(SETS[name], n=args.n, side=1), tokenizer)
        for name in args.sets
    }
    print(json.dumps({"bench": "engine", "n": args.n, "rounds": args.rounds, "beam": BEAM, "load_avg_start": load0,
                      "baseline": {"ref": args.baseline, "commit": base_commit} if base_tree else None,
                      "processes": info, "sets": results}))  # fmt: skip


if __name__ == "__main__":
    main()
