"""``create_app(settings)``: the FastAPI application (full-stack-fastapi-template layout).

The lifespan starts a background load: models are read from their directories onto the
configured device and dtype, checked and warmed up (``rendition.service.readiness``: finite weights, a
tokenizer that matches the model, a real translation and a real embedding), and then each model's
queue starts: the translator's step-level scheduler (``service.translation_engine.TranslationQueue``), the
encoder's dynamic batcher (``service.batcher.Batcher``).  The server answers ``/health/live`` at
once and ``/health/ready`` turns 200 when everything is warm; a failed load turns both to 503 (and
``rendition serve`` exits with status 1).  On shutdown the queues finish their work.

    uvicorn --factory rendition.service.app:create_app      # settings from RENDITION_* env vars
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import torch
from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.threads import name_native_thread
from rendition.model.translation.pairs import PairTable, package_dirs, read_languages
from rendition.model.translation.scheduler import worker_layout
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator
from rendition.model.weights import resolve_device
from rendition.service import connections, errors, readiness, tracing
from rendition.service.admission import Ledger, ServiceRate
from rendition.service.batcher import Batcher
from rendition.service.deps import AppState
from rendition.service.engines import (
    EmbeddingEngine,
    TranslationEngine,
    dtype_name,
    load_encoder,
    load_translator,
    resolve_dtype,
)
from rendition.service.metrics import Metrics
from rendition.service.middleware import ServiceMiddleware
from rendition.service.routers import embeddings, files, libretranslate, system, tei, translate, ui
from rendition.service.routing import DirectRoutes
from rendition.service.settings import Settings
from rendition.service.translation_engine import TranslationQueue

log = logging.getLogger("rendition.app")


def version() -> str:
    try:
        return metadata.version("rendition")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def ledger(s: Settings, metrics: Metrics) -> Ledger:
    """The admission ledger, its measured rate and ratios exported as gauges."""
    rate = ServiceRate(s.service_unit_s, busy_units=s.max_batch_tokens // 8)
    out = Ledger(s.request_timeout_s, rate, s.output_ratio,
                 on_ratio=lambda pair, r: metrics.admission_output_ratio.labels("-".join(pair)).set_function(lambda: r.value))  # fmt: skip
    metrics.admission_unit_seconds.set_function(lambda: rate.value)
    metrics.admission_in_flight_seconds.set_function(lambda: out.in_flight_s)
    return out


def _set_threads(s: Settings) -> None:
    if s.torch_threads:
        torch.set_num_threads(s.torch_threads)


def _set_loader_threads() -> None:
    """The model thread only loads and warms up, on one thread, so that it keeps no OpenMP team
    beside the translation workers' (rendition.model.translation.scheduler.worker_layout)."""
    name_native_thread("model-loader")
    torch.set_num_threads(1)


def _set_embedding_thread(threads: int) -> None:
    name_native_thread("embed")
    torch.set_num_threads(threads)


def _load_models(state: AppState, translator: Translator | None, encoder: SentenceEncoder | None) -> None:
    """Runs in the model thread (its initializer set the torch threads): load (unless given), warm
    up, record load times."""
    s = state.settings
    if "translator" in s.models:
        _load_translators(state, translator)
    if "encoder" in s.models:
        state.encoder = _load_engine(
            state,
            "encoder",
            lambda: encoder
            or load_encoder(
                s.encoder_path, s.device, s.dtype if s.encoder_dtype == "auto" else s.encoder_dtype, s.encoder_compute_type
            ),
            lambda m: EmbeddingEngine(m, s.encoder_name, state.metrics),
        )


def translator_dirs(s: Settings) -> list[Path | None]:
    """The translator directories to load: RENDITION_TRANSLATOR_PATH's, then the pair packages of
    RENDITION_MODELS_DIR; neither: [None], the shipped model."""
    dirs: list[Path | None] = [*s.translator_path, *(package_dirs(s.models_dir) if s.models_dir else [])]
    return dirs or [None]


def queue_name(index: int, languages: Sequence[str]) -> str:
    """The queue (and metrics ``model`` label) of the ``index``-th translator: "translator" for the first."""
    return "translator" if index == 0 else "translator-" + "-".join(sorted(languages))


def _itself(translator: Translator) -> Translator:
    return translator


def _load_translators(state: AppState, given: Translator | None) -> None:
    """Every translator directory (``translator_dirs``; ``given``: that one alone), after checking
    from their configs that no two serve the same direction; then the routing table."""
    s = state.settings
    dirs = translator_dirs(s)
    if given is None:
        languages = [read_languages(d or DEFAULT_TRANSLATOR) for d in dirs]
        PairTable(zip(dirs, languages), [str(d or DEFAULT_TRANSLATOR) for d in dirs])  # DuplicateDirection before loading
    else:
        dirs, languages = [None], [given.languages]
    for k, (d, langs) in enumerate(zip(dirs, languages)):
        name = s.translator_name if len(dirs) == 1 else f"{s.translator_name}-{'-'.join(sorted(langs))}"
        load: Callable[[], Translator] = (
            functools.partial(load_translator, d, s.device, s.dtype, s.kv_cache_dtype, s.compute_type, s.shortlist)
            if given is None else functools.partial(_itself, given)
        )  # fmt: skip
        make = functools.partial(TranslationEngine, name=name, metrics=state.metrics)
        state.translators[queue_name(k, langs)] = _load_engine(state, queue_name(k, langs), load, make)
    state.translator = next(iter(state.translators.values()))
    state.pairs = PairTable([(q, e.languages) for q, e in state.translators.items()], list(state.translators))


M = TypeVar("M", Translator, SentenceEncoder)
E = TypeVar("E", TranslationEngine, EmbeddingEngine)


def _load_engine(state: AppState, kind: str, load: Callable[[], M], make_engine: Callable[[M], E]) -> E:
    """load() the model, wrap it with make_engine, warm it up; log and record the time taken."""
    t0 = time.perf_counter()
    engine = make_engine(load())
    readiness.verify(kind.split("-")[0], engine, state.settings.warmup)  # finite weights, matching tokenizer, a real decode
    seconds = time.perf_counter() - t0
    state.metrics.model_load.labels(kind).set(seconds)
    log.info("model loaded", extra={"model": kind, "seconds": round(seconds, 3), **engine.info()})
    return engine


def freeze_loaded_objects() -> None:
    """The objects alive now (the models, the app) live as long as the process: moved out of the
    cyclic garbage collector's sight (``gc.freeze``), so that its full collections scan only what
    came after them.  A full scan of them held the GIL long enough to stall every thread
    (docs/benchmarks.md).  (Freed by their reference counts as before; only cycles among them stay.)"""
    gc.collect()
    gc.freeze()


async def _start(
    state: AppState,
    translator: Translator | None,
    encoder: SentenceEncoder | None,
    on_failure: Callable[[], None] | None,
) -> None:
    s = state.settings
    cores = s.torch_threads or torch.get_num_threads()  # (before the model thread sets its own: the count is process-wide)
    try:
        await asyncio.get_running_loop().run_in_executor(state.model_thread, _load_models, state, translator, encoder)
    except Exception as e:
        state.load_error = f"{type(e).__name__}: {e}"
        log.error("model loading failed", extra={"error": state.load_error})
        if on_failure is not None:
            on_failure()
        return
    # the cores shared out among the translators: each its own scheduler, together no more threads than cores
    per_translator = max(1, cores // max(1, len(state.translators)))
    workers, threads = worker_layout(s.translation_workers, s.worker_threads, per_translator, state.device)
    for name, engine in state.translators.items():
        state.queues[name] = TranslationQueue(
            name, engine, workers=workers, threads=threads, max_batch_tokens=s.max_batch_tokens,
            max_batch_size=s.max_batch_size, max_queue=s.max_queue, metrics=state.metrics, delay_ms=s.batch_delay_ms,
            nice=s.worker_nice, rate=state.ledger.rate if name == "translator" else None,
        )  # fmt: skip
    if state.encoder is not None:
        # Embeddings never wait behind a translation: their batches run on a thread of their own.
        # (torch.set_num_threads is process-wide for torch.get_num_threads, which the kernels read:
        # the embedding thread sets what the workers set.)
        state.embedding_thread = ThreadPoolExecutor(
            1, thread_name_prefix="rendition-embed", initializer=functools.partial(_set_embedding_thread, threads)
        )
        state.queues["encoder"] = Batcher(
            "encoder", state.encoder.core, max_batch_tokens=s.max_batch_tokens, max_batch_size=s.max_batch_size,
            max_wait_ms=s.max_wait_ms, max_queue=s.max_queue, metrics=state.metrics, delay_ms=s.batch_delay_ms,
            executor=state.embedding_thread,
        )  # fmt: skip
        if s.warmup:  # (each short sentence's first kernels: before the first request, not in it)
            await asyncio.get_running_loop().run_in_executor(state.embedding_thread, readiness.warm_encoder_shapes, state.encoder)
    for q in state.queues.values():
        q.start()
    freeze_loaded_objects()
    state.ready = True
    log.info(
        "ready",
        extra={"models": sorted(state.queues), "device": state.device, "dtype": state.dtype,
               "workers": workers, "threads_per_worker": threads},
    )  # fmt: skip


def create_app(
    settings: Settings | None = None,
    *,
    translator: Translator | None = None,
    encoder: SentenceEncoder | None = None,
    on_load_failure: Callable[[], None] | None = None,
) -> FastAPI:
    """Build the app.  ``translator`` / ``encoder`` may be given already loaded (tests);
    otherwise they are loaded from ``settings`` paths (default: the shipped models)."""
    settings = settings or Settings()
    if "RENDITION_TRANSLATION_ENGINE" in os.environ:
        log.warning(
            "RENDITION_TRANSLATION_ENGINE is no longer read: translations always run on the step-level scheduler"
        )
    _set_threads(settings)
    metrics = Metrics()
    # One thread loads and warms up the models, on one torch thread: each thread that runs torch's
    # OpenMP work keeps its own team of worker threads, and teams beyond the cores make OpenMP stop
    # spinning between parallel regions (the translation workers and the embedding thread then slow
    # down; docs/experiments.md).
    model_thread = ThreadPoolExecutor(1, thread_name_prefix="rendition-model", initializer=_set_loader_threads)
    state = AppState(settings=settings, metrics=metrics, model_thread=model_thread)
    state.ledger = ledger(settings, metrics)
    try:
        dev = resolve_device(settings.device)
        state.device, state.dtype = str(dev), dtype_name(resolve_dtype(settings.dtype, dev))
    except Exception as e:  # reported through readiness like any load failure
        state.load_error = f"{type(e).__name__}: {e}"
    metrics.build_info.labels(version(), state.device, state.dtype).set(1)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loader = None
        if state.load_error is None:
            loader = asyncio.create_task(_start(state, translator, encoder, on_load_failure))
        else:
            log.error("cannot start", extra={"error": state.load_error})
            if on_load_failure is not None:
                on_load_failure()
        yield
        state.draining = True
        if loader is not None:
            await loader  # a load in progress cannot be interrupted; let it finish
        for q in state.queues.values():
            await q.stop()  # finishes queued and running work
        assert state.model_thread is not None
        state.model_thread.shutdown(wait=True)
        if state.embedding_thread is not None:
            state.embedding_thread.shutdown(wait=True)
        if getattr(app.state, "file_store", None) is not None:
            app.state.file_store.close()  # translated files waiting for download
        log.info("stopped")

    app = FastAPI(
        title="Rendition",
        version=version(),
        description="Machine translation (relative-position Transformer) and sentence embeddings (DiSAN), "
        "with LibreTranslate- and OpenAI-compatible routes.",
        lifespan=lifespan,
        responses=errors.ERROR_RESPONSES,
        # Tracing is the service's own (``rendition.service.tracing``); FastAPI's native OpenTelemetry
        # (FastAPI >= 0.16x; older versions keep the keyword as an extra) stays off, which also spares
        # every request its look-up of the global providers.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.rendition = state
    routers = (
        translate.router, libretranslate.router, files.router, embeddings.router, tei.router, tei.health_router, system.router,
        ui.router,
    )  # fmt: skip
    for r in routers:
        app.include_router(r)
    errors.install(app)
    paths = frozenset(
        getattr(route, "path", "") for routes in (app.routes, *(r.routes for r in routers)) for route in routes
    ) - {""}
    app.add_middleware(DirectRoutes)  # (the innermost: added first)
    if settings.cors_origins:  # off by default: browsers on other origins get no CORS headers
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "X-Request-ID"],
            expose_headers=["X-Request-ID", "Retry-After"],
            max_age=600,
        )
    app.add_middleware(
        ServiceMiddleware,
        metrics=metrics,
        max_body_bytes=settings.max_body_bytes,
        known_paths=paths,
        gate=connections.Gate(state, routers),  # header count, API key and overload, before the body is read
        body_timeout_s=settings.body_timeout_s,
        body_limits={"/translate_file": files.body_limit(settings)},
    )
    tracing.setup(app)  # OpenTelemetry, only when OTEL_EXPORTER_OTLP_ENDPOINT is set
    return app
