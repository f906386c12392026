"""``rendition translate``: lines on stdin -> translations on stdout, one per line.

    rendition translate --source en --target fr < input.en > output.fr
    rendition translate --source en --target fr --engine ctranslate2 --model-dir DIR
    rendition translate --source fr --target de --translator EN_FR_DIR --translator EN_DE_DIR < input.fr

Order is preserved, empty (or blank) input lines give empty output lines.  ``--source auto``: each
line from its own detected language, as the service's ``source: "auto"`` (a line already in the
target language comes back as it is).  Every line goes through
the text pipeline the service runs (``rendition.model.text.pipeline``): split into sentences,
placeholders, glossary terms, URLs, paths and code kept as they are (``--no-protect-spans``: not the
spans), a sentence that reached its length limit decoded again with no repeated n-gram.  The
sentences are sorted by length and translated ``--batch-size`` at a time (little padding); a tqdm
progress bar goes to stderr when there is more than one batch.  Both engines
share the same pre/post-processing (``Translator``); ``--engine ctranslate2`` takes either a
directory written by ``rendition export-ct2`` or a rendition model directory (exported on the fly
to a temporary directory).  Several translators (``--translator`` repeated, or ``--models-dir``)
serve every pair of each, and a pair none has both languages of through English (source -> en in
one, en -> target in another; ``rendition.model.translation.pairs``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from rendition.model.text import pipeline
from rendition.model.text.glossary import Glossary, GlossaryError, load_glossary
from rendition.model.text.language_id import LanguageDetector, Runs
from rendition.model.text.segment import InputTooLong
from rendition.model.translation.options import InvalidOption, TranslationOptions
from rendition.model.translation.pairs import Leg, PairTable, package_dirs
from rendition.model.translation.search import Hypothesis, ended_by_limit
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, KV_CACHE_DTYPES, Translator
from rendition.model.weights import ModelLoadError


@dataclass(frozen=True)
class Loading:
    """How to load the translator (``rendition translate``'s options; ``translate-file`` takes the
    torch engine with its defaults)."""

    model_dir: str = str(DEFAULT_TRANSLATOR)
    engine: str = "torch"
    device: str = "auto"
    dtype: str = "float32"
    kv_cache_dtype: str = "auto"
    compute_type: str | None = None
    shortlist: str | bool | None = None
    threads: int = 0


def load_translator(how: Loading, stack: ExitStack) -> Translator:
    if not Path(how.model_dir).is_dir():
        raise ModelLoadError(f"model directory not found: {how.model_dir}")
    if how.engine == "torch":
        dtype = None if how.dtype == "float32" else how.dtype
        compute_type = {None: "auto", "default": None}.get(how.compute_type, how.compute_type)  # default: --dtype alone
        return Translator.from_pretrained(
            how.model_dir, device=how.device, dtype=dtype, kv_cache_dtype=how.kv_cache_dtype, compute_type=compute_type,
            shortlist=how.shortlist,
        )  # fmt: skip
    from rendition.model.export.ct2 import CT2Translator, export_ct2, is_ct2_dir

    ct2_dir: str | Path = how.model_dir
    if not is_ct2_dir(ct2_dir):
        ct2_dir = export_ct2(how.model_dir, stack.enter_context(tempfile.TemporaryDirectory()) + "/ct2")
    return CT2Translator.from_pretrained(ct2_dir, device=how.device, compute_type=how.compute_type or "default", threads=how.threads)


def translator_decoder(translator: Translator, target: str, batch_size: int = 32, progress: bool = True) -> pipeline.Decode:
    """The pipeline's ``decode`` on ``translator``: sentences sorted by length, ``batch_size`` at a
    time (with the step-level scheduler all submitted at once: it keeps its own searches full); a
    tqdm bar on stderr when there is more than one batch."""

    async def decode(batch: pipeline.Batch) -> pipeline.Decoded:
        sources = translator.preprocess(batch.sentences, target)  # (InputTooLong names the sentence)
        order = sorted(range(len(sources)), key=lambda k: len(sources[k]))
        starts = range(0, len(order), batch_size)
        chunks = [[sources[k] for k in order[s : s + batch_size]] for s in starts]
        bar = tqdm(total=len(order), unit="sentence", file=sys.stderr, disable=not progress or len(chunks) <= 1)
        scheduler = getattr(translator, "scheduler", None)
        if scheduler is not None:  # every batch to the scheduler at once: its searches stay full
            tickets = [scheduler.submit(chunk, batch.options) for chunk in chunks]
            results = (t.future.result() for t in tickets)
        else:
            results = (translator.core(chunk, batch.options) for chunk in chunks)
        raw: list[list[Hypothesis]] = [[] for _ in sources]
        for s, hyps in zip(starts, results):
            for k, h in zip(order[s : s + batch_size], hyps):
                raw[k] = h
            bar.update(len(hyps))
        bar.close()
        cut = ended_by_limit(sources, raw, batch.options)
        return pipeline.Decoded(translator.postprocess(raw), cut, sum(len(x) - 2 for x in sources))

    return decode


def route_decoder(
    legs: Sequence[Leg[Translator]], batch_size: int, progress: bool, opts: TranslationOptions, fallback_ngram: int
) -> tuple[pipeline.Decode, int]:
    """The pipeline's ``decode`` of a route and the no-repeat n-gram of the pipeline's own second
    decoding: one translator, the pipeline's; two (through English), ``pipeline.pivot``, each leg its own."""
    decoders = [translator_decoder(leg.translator, leg.target, batch_size, progress) for leg in legs]
    if len(decoders) == 1:
        return decoders[0], fallback_ngram
    return pipeline.pivot(decoders[0], decoders[1], pipeline.fallback_options(opts, fallback_ngram)), 0


def translate_lines(
    translator: Translator | PairTable[Translator],
    lines: Sequence[str],
    source: str,
    target: str,
    batch_size: int = 32,
    progress: bool = True,
    glossary: Glossary | None = None,
    protect_spans: bool = True,
    fallback_ngram: int = pipeline.DEFAULT_FALLBACK_NGRAM,
    **options: Any,
) -> list[str]:
    """Translate ``lines`` through the text pipeline (``rendition.model.text.pipeline``: split into
    sentences, placeholders, ``glossary`` terms and, with ``protect_spans``, URLs, paths and code
    kept, the second decoding of a sentence that reached its length limit); blank lines map to
    empty strings.  ``InputTooLong`` names the line (1-based) with a sentence over the input limit.
    ``translator``: one, or a table of several (a pair none has both languages of goes through English).
    ``source`` "auto": each line from its detected language (a line that mixes languages from each
    run's), a line in ``target`` as it is."""
    table = translator if isinstance(translator, PairTable) else PairTable([(translator, translator.languages)])
    texts = [line.strip() for line in lines]
    protection = pipeline.Protection(glossary=glossary, spans=protect_spans)
    opts = TranslationOptions(**options)

    def translate(texts: list[str], source: str, lines: list[int]) -> list[str]:
        legs = table.route(source, target)  # (UnsupportedPair names the pairs served)
        decode, ngram = route_decoder(legs, batch_size, progress, opts, fallback_ngram)
        try:
            result = asyncio.run(pipeline.translate(texts, source, decode, opts, protection, ngram))
        except pipeline.SentenceTooLong as e:
            raise InputTooLong(lines[e.text] + 1, e.length, e.limit, "line") from None
        return [t.text for t in result.translations]

    if source != "auto":
        return translate(texts, source, list(range(len(texts))))
    # each line from its own language, a line that mixes them from each of its runs' (the service's
    # source "auto"); a line or run in the target language is its own translation
    det = LanguageDetector(table.languages)
    runs = Runs.gather(det.runs(text, det.detect(text)[0][0]) if text else [] for text in texts)
    line_of = {lang: [0] * len(group) for lang, group in runs.by_language.items()}  # each run's line
    for i, mine in enumerate(runs.where):
        for lang, k in mine:
            line_of[lang][k] = i
    done = {lang: group if lang == target else translate(group, lang, line_of[lang]) for lang, group in runs.by_language.items()}
    return ["".join(parts) for parts in runs.put_back(done)]  # (a line's runs keep their own spacing)


def add_translator_options(p: argparse.ArgumentParser, engines: bool = False, auto_source: bool = False) -> None:
    """The options ``rendition translate`` and ``rendition translate-file`` share: the language pair,
    the model and where it runs, the search, the glossary and ``-q`` (``read_translator_options`` reads
    them).  ``engines``: also ``--engine`` (torch or ctranslate2), the help saying which takes what;
    ``auto_source``: ``--source auto`` detects the language."""
    p.add_argument("--source", "-s", required=True, help="source language code, e.g. en" + (", or auto" if auto_source else ""))
    p.add_argument("--target", "-t", required=True, help="target language code, e.g. fr")
    if engines:
        p.add_argument("--engine", choices=["torch", "ctranslate2"], default="torch")
    p.add_argument("--model-dir", default=str(DEFAULT_TRANSLATOR), help="model directory (default: the shipped one)")
    p.add_argument("--beam-size", type=int, default=4)
    p.add_argument("--max-length", type=int, default=256, help="cap on generated tokens per sentence")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument(
        "--threads", type=int, default=None,
        help="CPU threads (torch engine: per worker, CTranslate2's intra_threads; default: cores / workers)" if engines
        else "CPU threads per worker (default: cores / workers)",
    )  # fmt: skip
    p.add_argument(
        "--workers", type=int, default=0,
        help=("torch engine: workers" if engines else "workers") + ", each running its own continuous beam search "
        "(CTranslate2's inter_threads; default: one per core on CPU, docs/benchmarks.md)",
    )  # fmt: skip
    p.add_argument(
        "--compute-type", default=None,
        help="auto, int8, float32, float16 or bfloat16, or default (torch engine: --dtype alone; ctranslate2: the model's "
        "own type; ctranslate2 also takes its other types); unset: auto for the torch engine (int8 on a CPU with VNNI or "
        "AVX2, else float32), default for ctranslate2" if engines
        else "auto (default: int8 on a CPU with VNNI or AVX2, else float32), int8, float32, float16, bfloat16",
    )  # fmt: skip
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--glossary", metavar="FILE", help="source<TAB>target lines (or a .json object): terms translated as given")
    p.add_argument(
        "--no-protect-spans", dest="protect_spans", action="store_false",
        help="translate URLs, e-mail addresses, paths, code and version numbers too (default: kept as they are)",
    )  # fmt: skip
    p.add_argument(
        "--fallback-no-repeat-ngram", type=int, default=pipeline.DEFAULT_FALLBACK_NGRAM, metavar="N",
        help="a sentence whose translation reaches its length limit is decoded again with no N-gram repeated (0: not)",
    )  # fmt: skip


def add_storage_options(p: argparse.ArgumentParser, note: str = "") -> None:
    """``--kv-cache-dtype`` and ``--shortlist``, which ``Translator.from_pretrained`` takes as
    ``kv_cache_dtype`` and ``shortlist``; ``note`` starts each help ("torch engine: ")."""
    p.add_argument(
        "--kv-cache-dtype", default="auto", choices=["auto", *KV_CACHE_DTYPES],
        help=note + "storage of the decoder's cached keys/values (auto: the model's dtype)",
    )  # fmt: skip
    p.add_argument(
        "--shortlist", nargs="?", const=True, default=None, metavar="FILE",
        help=note + "the vocabulary shortlist (default: shortlist.safetensors in the model directory; rendition build-shortlist)",
    )  # fmt: skip


def read_translator_options(p: argparse.ArgumentParser, args: argparse.Namespace, **search: Any) -> tuple[dict, Glossary | None]:
    """The search options (``--beam-size``, ``--max-length`` and ``search``) and the glossary that
    ``add_translator_options``' options ask for; ``p.error`` (exit 2) naming the option for a bad one."""
    options = dict(beam_size=args.beam_size, max_length=args.max_length, **search)
    if args.fallback_no_repeat_ngram < 0:
        p.error("--fallback-no-repeat-ngram must be >= 0")
    try:
        TranslationOptions(**options)
    except InvalidOption as e:
        p.error(f"--{e.field.replace('_', '-')}: {e}")
    try:
        return options, load_glossary(args.glossary) if args.glossary else None
    except (OSError, GlossaryError) as e:
        p.error(f"--glossary: {e}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rendition translate", description=__doc__.split("\n\n")[0])
    add_translator_options(p, engines=True, auto_source=True)
    p.add_argument("--length-penalty", type=float, default=1.0, help="alpha (GNMT for torch, length**alpha for ct2)")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per batch")
    p.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"], help="torch engine")
    add_storage_options(p, note="torch engine: ")
    p.add_argument(
        "--translator", action="append", default=[], metavar="DIR",
        help="torch engine: a translator directory (a pair package); repeat it to serve several pairs (a pair none has "
        "both languages of goes through English); instead of --model-dir",
    )  # fmt: skip
    p.add_argument("--models-dir", metavar="DIR", help="torch engine: every subdirectory holding a translator is a pair package")
    return p


def translator_dirs(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """``--translator`` and ``--models-dir``'s pair packages; neither: ``--model-dir`` alone."""
    try:
        found = package_dirs(Path(args.models_dir)) if args.models_dir else []
    except FileNotFoundError as e:
        p.error(f"--models-dir: {e}")
    dirs = [*args.translator, *(str(d) for d in found)]
    if dirs and args.engine != "torch":
        p.error("--translator / --models-dir: torch engine only")
    return dirs or [args.model_dir]


def load_table(how: Loading, dirs: Sequence[str], stack: ExitStack, workers: int, threads: int, cores: int) -> PairTable[Translator]:
    """Every translator of ``dirs`` (``DuplicateDirection`` when two serve one direction), each
    (torch engine) with its workers on its share of the cores."""
    translators = [load_translator(replace(how, model_dir=d), stack) for d in dirs]
    table = PairTable([(t, t.languages) for t in translators], list(dirs))
    if how.engine == "torch":
        for t in translators:
            t.start_workers(workers, threads, cores=max(1, cores // len(translators)))
            stack.callback(t.close)
    return table


def main(argv: Sequence[str] | None = None) -> None:
    p = build_parser()
    args = p.parse_args(argv)
    if args.batch_size < 1:
        p.error("--batch-size must be >= 1")
    options, glossary = read_translator_options(p, args, length_penalty=args.length_penalty)
    if args.threads and args.engine == "ctranslate2":
        torch.set_num_threads(args.threads)

    cores = torch.get_num_threads()
    if args.engine == "torch":  # the workers set their own threads; the model is loaded on one (worker_layout)
        torch.set_num_threads(1)

    dirs = translator_dirs(p, args)
    lines = sys.stdin.buffer.read().decode("utf-8", errors="replace").splitlines()
    with ExitStack() as stack:
        try:
            how = Loading(
                dirs[0], args.engine, args.device, args.dtype, args.kv_cache_dtype, args.compute_type, args.shortlist,
                args.threads or 0,
            )  # fmt: skip
            table = load_table(how, dirs, stack, args.workers, args.threads or 0, cores)
            if args.source == "auto":
                if args.target not in table.languages:
                    raise ValueError(f"unsupported target language {args.target}; the translators know {', '.join(table.languages)}")
            else:
                table.route(args.source, args.target)
            outputs = translate_lines(
                table,
                lines,
                args.source,
                args.target,
                batch_size=args.batch_size,
                progress=not args.quiet,
                glossary=glossary,
                protect_spans=args.protect_spans,
                fallback_ngram=args.fallback_no_repeat_ngram,
                **options,
            )
        except (RuntimeError, OSError, ValueError, KeyError) as e:  # ModelLoadError, ct2 device errors
            print(f"rendition translate: error: {e}", file=sys.stderr)
            raise SystemExit(2) from e
    sys.stdout.buffer.write("".join(f"{line}\n" for line in outputs).encode("utf-8"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
