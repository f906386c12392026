"""Translation throughput: our engine (KV cache / full-prefix recompute) vs CTranslate2, and the
cost of one decoding step as the target grows.

    python benchmarks/bench_translate.py [--threads 2] [--batch 32] [--beam 4] [--batches 2] [--rounds 3]

One run prints one table.  Each engine runs in a process of its own (started by this one, which
asks for one measurement at a time, so the engines never run at once and never share a thread
pool), with the same thread count, on the same ~25-token English sources from
data/splits/test.en-fr.tsv, with the same search: beam, length_penalty 0 (both engines then stop
on the same rule) and one fixed cap of 48 tokens (~1.5 x 25 + 10) for every sentence, so that a
model that never emits </s> (the random stand-in) makes every engine run the same steps.
Throughput is generated tokens (best hypothesis, </s> included when emitted) per second of wall
time and per second of the engine process's CPU time (the robust figure when other jobs share the
CPU); the engines take turns for --rounds rounds and each figure is the median round.

(a) ours: ``rendition.model.translation.search.generate_ids`` with the KV cache (``Transformer.decode_step``);
(b) ours without cache: the same ``generate_ids`` driving a shim whose ``decode_step`` re-runs the
    decoder stack on the whole prefix every step (logits for the last position only);
(c) CTranslate2 float32 on the exported weights (``rendition export-ct2``);
with --kv-float16 also (a) with its cached keys/values stored as float16 (``kv_cache_dtype``).

Step cost vs t, three ways: per-step timestamps inside a greedy run on batch x beam rows forced to
210 steps, for ours and CTranslate2 (its per-token callback); the per-step cost of the benchmark's
own batch x beam search around t=25 and t=200 for both engines (searches forced to exactly L
steps, finite differences over L), and for ours also around t=20 and t=200 from per-step
timestamps inside such searches; and one ``decode_step`` of ours at t=20 and t=200 on a filled
cache (median of repeats), next to the recompute-prefix step whose cost grows with t.  Timestamp
medians pool 11 steps around t over --beam-repeats runs.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine_process import EngineProcess, tempdir  # noqa: E402

from rendition.model.export.ct2 import CT2Engine, export_ct2  # noqa: E402
from rendition.model.tokenizer import Tokenizer  # noqa: E402
from rendition.model.translation.backends import TorchBackend, select_backend  # noqa: E402
from rendition.model.translation.options import TranslationOptions  # noqa: E402
from rendition.model.translation.search import generate_ids  # noqa: E402
from rendition.model.translation.transformer import Transformer, TransformerConfig  # noqa: E402
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator  # noqa: E402

ALL_AT_ONCE = 1 << 62  # generate_ids' token budget: every sentence of a batch joins at the first step


# -- (b) the no-cache baseline ---------------------------------------------------------------------
class PrefixCache:
    """Stands in for DecoderCache: keeps the generated prefix instead of keys/values (every row at
    the same step: sentences join before the first step only)."""

    def __init__(self, beams: int, device: torch.device):
        self.beams, self.device = beams, device
        self.mem = self.mem_mask = None
        self.prefix = torch.empty(0, 0, dtype=torch.long, device=device)  # (N, t)

    def reserve(self, sentences: int, positions: int = 0, long_lived: bool = False) -> None:
        pass

    def join(self, cross: torch.Tensor, mem_mask: torch.Tensor, max_len: int) -> None:
        if self.prefix.shape[1]:
            raise NotImplementedError("the no-cache baseline takes its sentences before the first step")
        mem, mask = cross.repeat_interleave(self.beams, 0), mem_mask.repeat_interleave(self.beams, 0)
        self.mem = mem if self.mem is None else torch.cat([self.mem, mem])
        self.mem_mask = mask if self.mem_mask is None else torch.cat([self.mem_mask, mask])
        self.prefix = torch.empty(len(self.mem), 0, dtype=torch.long, device=self.device)

    def reorder(self, beam_idx: torch.Tensor) -> None:
        self.prefix = self.prefix.index_select(0, beam_idx)

    def select(self, rows: torch.Tensor) -> None:
        self.prefix, self.mem, self.mem_mask = (x.index_select(0, rows) for x in (self.prefix, self.mem, self.mem_mask))

    @property
    def batch_size(self) -> int:
        return len(self.prefix)

    def nbytes(self) -> int:
        return 0


class NoCacheModel:
    """A search back end (``rendition.model.translation.search``): every step recomputes the decoder over the
    whole prefix."""

    def __init__(self, model: Transformer):
        self.model, self.cfg = model, model.cfg
        self.device = model.embed.weight.device

    def encode(self, src: torch.Tensor):
        return self.model.encode(src)

    def cross_states(self, mem: torch.Tensor) -> torch.Tensor:
        return mem  # (the memory itself: the decoder runs whole)

    def new_cache(self, beams: int, kv_dtype: torch.dtype | None = None) -> PrefixCache:
        return PrefixCache(beams, self.device)

    def decode_step(self, tokens: torch.Tensor, cache: PrefixCache) -> torch.Tensor:
        m = self.model
        cache.prefix = torch.cat([cache.prefix, tokens[:, None]], 1)  # (N, t+1)
        T = cache.prefix.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
        x = m.embed_tokens(cache.prefix)
        rel = m.rel_idx(T, T, tokens.device)
        for layer in m.decoder_layers:
            x = layer(x, cache.mem, causal, cache.mem_mask, rel)
        return m.logits(m.decoder_norm(x[:, -1]))  # (N, V): last position only


# -- setup ------------------------------------------------------------------------------------------
def load_model(model_dir: Path, tmp: Path | None = None) -> tuple[Transformer, str, Path]:
    """The shipped model if its weights exist, else a random model of the shipped shape (saved
    under tmp, a fresh temporary directory by default)."""
    if (model_dir / "model.safetensors").is_file():
        tr = Translator.from_pretrained(model_dir, device="cpu")
        return tr.model, f"trained model {model_dir}", model_dir
    from safetensors.torch import save_file

    cfg = TransformerConfig(vocab_size=8000, d_model=256, n_heads=4, d_ff=1024, n_encoder_layers=6, n_decoder_layers=2)
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    tmp = tmp if tmp is not None else tempdir("bench_model_")
    tmp.mkdir(parents=True, exist_ok=True)
    cfg.save(tmp / "config.json")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / "model.safetensors"))
    (tmp / "sentencepiece.model").write_bytes((DEFAULT_TRANSLATOR / "sentencepiece.model").read_bytes())
    return model, "RANDOM model of the shipped shape (no trained weights found)", tmp


def load_sources(tok: Tokenizer, n: int, lo: int, hi: int) -> list[list[int]]:
    tag = tok.lang_id("fr")
    out = []
    with open(ROOT / "data" / "splits" / "test.en-fr.tsv", newline="") as f:
        for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            ids = tok.encode([row[0]])[0]
            if lo <= len(ids) + 2 <= hi:
                out.append([tag, *ids, 3])
                if len(out) == n:
                    return out
    raise SystemExit(f"only {len(out)} sources of {lo}-{hi} tokens found")


def pad(batch: list[list[int]]) -> torch.Tensor:
    src = torch.zeros(len(batch), max(map(len, batch)), dtype=torch.long)
    for r, s in enumerate(batch):
        src[r, : len(s)] = torch.tensor(s)
    return src


def throughput(run, batches: list[list[list[int]]]) -> tuple[int, float, float]:
    """(generated tokens, wall seconds, process CPU seconds); ``run(batch)`` -> tokens per sentence."""
    run(batches[0][:4])  # warm-up
    tokens, t0, c0 = 0, time.perf_counter(), time.process_time()
    for b in batches:
        tokens += sum(run(b))
    return tokens, time.perf_counter() - t0, time.process_time() - c0


def step_cost(model: Transformer, src: torch.Tensor, beam: int, ts: tuple[int, ...], repeats: int) -> dict[int, float]:
    """Median seconds of one decode_step at step t, cache filled to max(ts)+1 steps."""
    with torch.inference_mode():
        mem, mask = model.encode(src)
        mem, mask = mem.repeat_interleave(beam, 0), mask.repeat_interleave(beam, 0)
        cache = TorchBackend(model).new_cache(1)  # (a DenseCache, every row at the same step)
        cache.join(model.cross_states(mem), mask, max(ts) + 1)
        tok = torch.randint(10, model.cfg.vocab_size, (mem.shape[0],))
        for _ in range(max(ts) + 1):
            model.decode_step(tok, cache)
        out = {}
        for t in ts:
            wall, cpu = [], []
            for _ in range(repeats):
                cache.steps.fill_(t)
                t0, c0 = time.perf_counter(), time.process_time()
                model.decode_step(tok, cache)
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            out[t] = (statistics.median(wall), statistics.median(cpu))
    return out


FORCED = 210


def _kv_dtype(mode: str) -> torch.dtype | None:
    """The KV cache storage of our engine's measurement ``mode`` ("kv16": float16)."""
    return torch.float16 if mode == "kv16" else None


class _CacheLength:
    """Passes through to the model; allocates every KV cache for at least ``length`` positions.

    Searches forced to different lengths then differ in their steps only: a step at the same t
    costs a few percent more in a longer cache (its rows lie further apart), and a difference of
    two whole searches would multiply that by (steps before the span) / (span length)."""

    def __init__(self, model, length: int = 0):
        self.model, self.cfg, self.length = model, model.cfg, length

    def __getattr__(self, name: str):
        return getattr(self.model, name)  # (encode, cross_states, device)

    def new_cache(self, beams: int, kv_dtype: torch.dtype | None = None):
        cache = self.model.new_cache(beams, kv_dtype)
        cache.WIDEN = max(cache.WIDEN, self.length)  # (its first join allocates at least ``length`` positions)
        return cache

    def decode_step(self, tokens, cache):
        return self.model.decode_step(tokens, cache)


class _Stamped(_CacheLength):
    """Passes through to the model; stamps (wall, thread CPU) at every decode_step call."""

    def __init__(self, model: Transformer):
        super().__init__(model)
        self.stamps = []

    def decode_step(self, tokens, cache):
        self.stamps.append((time.perf_counter(), time.thread_time()))
        return self.model.decode_step(tokens, cache)


def stamp_ours(
    model: Transformer, rows: list[list[int]], kv_dtype: torch.dtype | None = None, beam: int = 1
) -> list[tuple[float, float]]:
    shim = _Stamped(model)
    opts = TranslationOptions(
        beam_size=beam, max_length=FORCED, max_length_a=0.0, max_length_b=FORCED, min_length=FORCED - 1, kv_cache_dtype=kv_dtype
    )
    generate_ids(shim, rows, opts, ALL_AT_ONCE)
    return shim.stamps


def stamp_ct2(engine: CT2Engine, rows: list[list[int]]) -> list[tuple[float, float]]:
    stamps = []

    def callback(step) -> bool:
        if step.batch_id == 0:
            stamps.append((time.perf_counter(), time.thread_time()))  # runs on the computing thread
        return False

    engine.translator.translate_batch(
        [engine.to_pieces(s) for s in rows],
        beam_size=1,
        max_decoding_length=FORCED,
        min_decoding_length=FORCED,
        max_input_length=0,
        callback=callback,
    )
    return stamps


def forced_seconds(run, length: int) -> tuple[float, float]:
    """(wall, process CPU) seconds of ``run(length)``: one search forced to exactly ``length`` steps."""
    t0, c0 = time.perf_counter(), time.process_time()
    run(length)
    return time.perf_counter() - t0, time.process_time() - c0


def beam_step_cost(run, spans: dict[int, tuple[int, int]], repeats: int) -> dict[int, tuple[float, float]]:
    """Per-step (wall, CPU) seconds of a whole beam search step around t, as finite differences
    (cost(hi) - cost(lo)) / (hi - lo) of searches forced to lo and hi steps (medians over repeats);
    the same method for both engines, as CTranslate2 reports no per-step times with beam > 1."""
    out = {}
    for t, (lo, hi) in spans.items():
        d = [[b - a for a, b in zip(forced_seconds(run, lo), forced_seconds(run, hi))] for _ in range(repeats)]
        out[t] = (statistics.median(x[0] for x in d) / (hi - lo), statistics.median(x[1] for x in d) / (hi - lo))
    return out


def step_medians(runs: list[list[tuple[float, float]]], t: int, half: int = 5) -> tuple[float, float]:
    """Median wall and CPU interval between consecutive step stamps for steps t-half .. t+half,
    pooled over the runs (each a list of stamps of one search)."""
    span = range(t - half, t + half + 1)
    wall = statistics.median(s[i + 1][0] - s[i][0] for s in runs for i in span)
    cpu = statistics.median(s[i + 1][1] - s[i][1] for s in runs for i in span)
    return wall, cpu


def nocache_step_cost(
    model: Transformer, src: torch.Tensor, beam: int, ts: tuple[int, ...], repeats: int
) -> dict[int, float]:
    nc = NoCacheModel(model)
    with torch.inference_mode():
        mem, mask = model.encode(src)
        mem, mask = mem.repeat_interleave(beam, 0), mask.repeat_interleave(beam, 0)
        out = {}
        for t in ts:
            wall, cpu = [], []
            for _ in range(repeats):
                cache = nc.new_cache(1)
                cache.join(mem, mask, t + 1)
                cache.prefix = torch.randint(10, model.cfg.vocab_size, (mem.shape[0], t))
                t0, c0 = time.perf_counter(), time.process_time()
                nc.decode_step(cache.prefix[:, -1], cache)
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            out[t] = (statistics.median(wall), statistics.median(cpu))
    return out


# -- one process per engine ------------------------------------------------------------------------
# Each engine is measured in a process of its own.  Run in one process, CTranslate2 (its own OpenMP
# runtime and thread pool) slows torch's 2-thread work that follows it for about a second
# (measured: a 1-row step 0.8 ms before a CTranslate2 call, 2.5 ms right after, 1.3 ms a second
# later), which biased every 2-thread figure taken after it; separate processes that take turns
# do not share thread pools.
class EngineBench:
    """All measurements of one engine ("ours" or "ct2"), inside that engine's process."""

    def __init__(self, engine: str, args: argparse.Namespace, tmp: Path):
        torch.set_num_threads(args.threads)
        self.engine, self.args = engine, args
        self.model, self.which, model_dir = load_model(args.model_dir, tmp / "model")
        self.backend = select_backend(self.model)  # how ours runs (chosen once, as Translator does)
        self.tok = Tokenizer(model_dir / "sentencepiece.model")
        n = args.batch * args.batches
        self.sources = load_sources(self.tok, n, 23, 27)
        self.batches = [self.sources[i : i + args.batch] for i in range(0, n, args.batch)]
        # Same fixed cap for every sentence and engine (about 1.5 x 25 + 10), so a model that never
        # emits </s> (a random one) makes every engine run exactly the same number of steps.
        self.opts = dict(beam_size=args.beam, length_penalty=0.0, max_length=48, max_length_a=0.0, max_length_b=48)
        if engine == "ct2":
            ct2_dir = tmp / "ct2"
            if not ct2_dir.exists():
                export_ct2(model_dir, ct2_dir)
            self.ct2 = CT2Engine(ct2_dir, self.tok.pieces(), device="cpu", compute_type="float32", threads=args.threads)

    def info(self) -> dict:
        import ctranslate2

        return {
            "which": self.which,
            "params": self.model.num_parameters(),
            "backend": self.backend.name,
            "mean_src": sum(map(len, self.sources)) / len(self.sources),
            "versions": f"torch {torch.__version__}; ctranslate2 {ctranslate2.__version__}",
        }

    # Every engine returns, per sentence, how many tokens it generated (</s> included when emitted).
    # ``mode`` (ours): "cache" (the KV cache in the model's dtype), "kv16" (stored as float16) or
    # "nocache" (the recompute-prefix baseline).
    def _run(self, b: list[list[int]], mode: str = "cache") -> list[int]:
        if self.engine == "ct2":
            cap = self.opts["max_length"]
            return [min(len(h[0].tokens) + 1, cap) for h in self.ct2.core(b, TranslationOptions(**self.opts))]
        m = NoCacheModel(self.model) if mode == "nocache" else self.backend
        opts = TranslationOptions(**self.opts, kv_cache_dtype=_kv_dtype(mode))
        return [len(h[0].tokens) + 1 for h in generate_ids(m, b, opts, ALL_AT_ONCE)]

    def throughput(self, mode: str = "cache") -> tuple[int, float, float]:
        bs = self.batches[: self.args.nocache_batches] if mode == "nocache" else self.batches
        return throughput(partial(self._run, mode=mode), bs)

    def stamps(self, n_rows: int, mode: str = "cache") -> list[tuple[float, float]]:
        """Step timestamps of a greedy run on n_rows sources forced to FORCED steps."""
        b0 = self.batches[0]
        rows = [b0[i % len(b0)] for i in range(n_rows)]
        if self.engine == "ct2":
            return stamp_ct2(self.ct2, rows)
        return stamp_ours(self.backend, rows, _kv_dtype(mode))

    def beam_stamps(self, mode: str = "cache") -> list[tuple[float, float]]:
        """Ours: step timestamps inside the benchmark's batch x beam search forced to FORCED steps."""
        return stamp_ours(self.backend, self.batches[0], _kv_dtype(mode), self.args.beam)

    def beam_forced(
        self, spans: dict[int, tuple[int, int]], repeats: int, mode: str = "cache"
    ) -> dict[int, tuple[float, float]]:
        b0 = self.batches[0]
        model = _CacheLength(self.backend, max(hi for _, hi in spans.values()))  # one cache size for all

        def run(n: int) -> None:
            if self.engine == "ct2":
                self.ct2.translator.translate_batch(
                    [self.ct2.to_pieces(s) for s in b0], beam_size=self.args.beam, length_penalty=0.0,
                    max_decoding_length=n, min_decoding_length=n, max_input_length=0,
                )  # fmt: skip
            else:
                o = TranslationOptions(beam_size=self.args.beam, length_penalty=0.0, max_length=n, max_length_a=0.0, max_length_b=n)
                o.min_length = n - 1
                o.kv_cache_dtype = _kv_dtype(mode)
                generate_ids(model, b0, o, ALL_AT_ONCE)

        return beam_step_cost(run, spans, repeats)

    def step_cost(self, ts: tuple[int, ...], repeats: int, nocache: bool = False) -> dict[int, tuple[float, float]]:
        cost = nocache_step_cost if nocache else step_cost
        return cost(self.model if nocache else self.backend, pad(self.batches[0]), self.args.beam, ts, repeats)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batches", type=int, default=2, help="timed batches per engine")
    p.add_argument("--model-dir", type=Path, default=DEFAULT_TRANSLATOR)
    p.add_argument("--skip-nocache", action="store_true", help="skip the slow full-recompute engine")
    p.add_argument("--nocache-batches", type=int, default=1, help="timed batches for the recompute engine")
    p.add_argument("--repeats", type=int, default=15, help="repeats per step-cost measurement")
    p.add_argument("--rounds", type=int, default=3, help="throughput rounds per engine, taken in turns (median)")
    p.add_argument("--beam-repeats", type=int, default=3, help="forced beam searches per length (median)")
    p.add_argument(
        "--kv-float16", action="store_true", help="also ours with the KV cache stored as float16 (kv_cache_dtype)"
    )
    args = p.parse_args()

    tmp = tempdir("bench_translate_")
    ours = EngineProcess(EngineBench, "ours", args, tmp)
    ct2 = EngineProcess(EngineBench, "ct2", args, tmp)
    info = ours("info")

    print(f"# bench_translate  {time.strftime('%Y-%m-%d %H:%M:%S')}")
    print(f"model: {info['which']} ({info['params'] / 1e6:.1f}M params); ours runs on the {info['backend']} back end")
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, no GPU; "
        f"threads={args.threads}; {info['versions']}; load average at start {os.getloadavg()[0]:.2f}"
    )
    print(
        f"workload: {args.batches} batches x {args.batch} sentences x beam {args.beam}, mean source"
        f" {info['mean_src']:.1f} tokens; one process per engine; throughput: median of {args.rounds} rounds,"
        " engines in turns"
    )
    print()

    # The engines take turns, --rounds times; each row is the median round (wall and CPU apart), so a
    # burst of load from elsewhere on the machine hits one round of one engine, not the comparison.
    engines = [("ours, KV cache", ours, "cache")]
    if args.kv_float16:
        engines.append(("ours, float16 KV cache", ours, "kv16"))
    if not args.skip_nocache:
        engines.append(("ours, recompute prefix", ours, "nocache"))
    engines.append(("CTranslate2 float32", ct2, "cache"))
    runs: dict[str, list[tuple[int, float, float]]] = {name: [] for name, _, _ in engines}
    for r in range(args.rounds):
        for name, proc, mode in engines:
            if r == 0 or mode != "nocache":  # (the slow baseline: one round)
                runs[name].append(proc("throughput", mode))
    rows = [
        (name, res[0][0], statistics.median(x[1] for x in res), statistics.median(x[2] for x in res))
        for name, res in runs.items()
    ]

    ref_wall, ref_cpu = rows[-1][1] / rows[-1][2], rows[-1][1] / rows[-1][3]
    print("tokens = generated tokens incl. </s>; tokens/s per wall second; tokens/cpu-s per second of the")
    print("engine process's CPU time (the figure to trust when other jobs share the cores)")
    print(
        f"{'engine':<26}{'tokens':>8}{'wall s':>9}{'tokens/s':>10}{'vs ct2':>8}{'cpu s':>9}{'tokens/cpu-s':>14}{'vs ct2':>8}"
    )
    for name, tokens, wall, cpu in rows:
        print(
            f"{name:<26}{tokens:>8}{wall:>9.2f}{tokens / wall:>10.1f}{tokens / wall / ref_wall:>8.2f}"
            f"{cpu:>9.2f}{tokens / cpu:>14.1f}{tokens / cpu / ref_cpu:>8.2f}"
        )
    print()

    # Per-step time inside one long generation, both engines, same method: greedy search on
    # batch x beam rows forced to 210 steps (</s> forbidden), a timestamp per step (our decode_step
    # calls; CTranslate2's per-token callback), medians of the step intervals around t=20, t=200.
    n_rows = args.batch * args.beam
    print(
        f"per-step time inside a forced 210-step greedy run on {n_rows} rows (median over 11 steps x"
        f" {args.beam_repeats} runs), wall / cpu ms:"
    )
    stepping = [("ours, KV cache", ours, "cache")]
    if args.kv_float16:
        stepping.append(("ours, float16 KV", ours, "kv16"))
    stepping.append(("CTranslate2 float32", ct2, "cache"))
    for name, proc, mode in stepping:
        runs = [proc("stamps", n_rows, mode) for _ in range(args.beam_repeats)]
        (w20, c20), (w200, c200) = (step_medians(runs, t) for t in (20, 200))
        print(
            f"  {name:<20} t=20 {w20 * 1e3:8.2f} / {c20 * 1e3:7.2f}   t=200 {w200 * 1e3:8.2f} / {c200 * 1e3:7.2f}"
            f"   ratio t200/t20: wall {w200 / w20:.2f}, cpu {c200 / c20:.2f}"
        )
    print("  (cpu = the computing thread's CPU time: meaningful with --threads 1)")
    # Small batches (a lone request, a few concurrent ones): fixed per-step costs dominate there.
    print("  the same at t=20 with fewer rows (small batches: per-step overhead), wall ms:")
    for n in (1, 4, 16):
        w_ours, w_ct2 = (step_medians([proc("stamps", n)], 20)[0] for proc in (ours, ct2))
        print(f"    {n:3d} rows: ours {w_ours * 1e3:6.2f}   CTranslate2 {w_ct2 * 1e3:6.2f}   ours/ct2 time {w_ours / w_ct2:.2f}")
    print()

    # The benchmark's own workload, batch x beam beam search, forced to L steps (</s> forbidden
    # before the last step): per-step cost around t=25 and t=200 by finite differences over L.
    # Beams of a sentence share their prefix, so this is where the by-reference KV cache helps.
    spans = {25: (10, 40), 200: (180, 220)}
    reps = args.beam_repeats
    print(
        f"per-step time of a {args.batch} x beam {args.beam} search forced to L steps, (cost(hi) - cost(lo)) / (hi - lo),"
        f" median of {reps}, wall / cpu ms (ours: every search's cache allocated for"
        f" {max(hi for _, hi in spans.values())} positions):"
    )
    for name, proc, mode in stepping:
        c = proc("beam_forced", spans, reps, mode)
        (w25, c25), (w200, c200) = c[25], c[200]
        print(
            f"  {name:<20} t=25 {w25 * 1e3:8.2f} / {c25 * 1e3:7.2f}   t=200 {w200 * 1e3:8.2f} / {c200 * 1e3:7.2f}"
            f"   ratio t200/t25: wall {w200 / w25:.2f}, cpu {c200 / c25:.2f}"
        )
    # Ours also from timestamps at every step of such searches forced to 210 steps (less noise than
    # differences of whole searches; CTranslate2 has no per-step callback for beam search).
    print(
        f"  the same from per-step timestamps inside {FORCED}-step searches (median over 11 steps x {reps} searches),"
        " wall / cpu ms:"
    )
    for name, proc, mode in stepping[:-1]:
        runs = [proc("beam_stamps", mode) for _ in range(reps)]
        (w20, c20), (w200, c200) = (step_medians(runs, t) for t in (20, 200))
        print(
            f"  {name:<20} t=20 {w20 * 1e3:8.2f} / {c20 * 1e3:7.2f}   t=200 {w200 * 1e3:8.2f} / {c200 * 1e3:7.2f}"
            f"   ratio t200/t20: wall {w200 / w20:.2f}, cpu {c200 / c20:.2f}"
        )
    print()

    ts = (20, 200)
    costs = {"KV cache": ours("step_cost", ts, args.repeats)}
    if not args.skip_nocache:
        costs["recompute prefix"] = ours("step_cost", ts, max(3, args.repeats // 5), True)
    print(f"one decode_step of ours at step t ({args.batch}x{args.beam} rows, median of {args.repeats}), wall / cpu ms:")
    for name, c in costs.items():
        (w20, c20), (w200, c200) = c[20], c[200]
        print(
            f"  {name:<18} t=20 {w20 * 1e3:8.2f} / {c20 * 1e3:8.2f}   t=200 {w200 * 1e3:8.2f} / {c200 * 1e3:8.2f}"
            f"   ratio t200/t20: wall {w200 / w20:.2f}, cpu {c200 / c20:.2f}"
        )
    ours.close()
    ct2.close()


if __name__ == "__main__":
    main()
