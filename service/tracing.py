"""Opt-in OpenTelemetry tracing (``pip install 'rendition[otel]'``); every span the service makes.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set.
Then each HTTP request gets a server span from the standard FastAPI instrumentation
(``opentelemetry-instrumentation-fastapi``; health checks and ``/metrics`` are left out), exported
over OTLP/HTTP by the SDK, which also reads the other ``OTEL_*`` variables (``OTEL_SERVICE_NAME``,
default ``rendition``; ``OTEL_EXPORTER_OTLP_HEADERS``; ``OTEL_TRACES_SAMPLER``, ...).  Under a
request's span the batcher adds, for every batch that carries some of its sentences:

* ``rendition.queue_wait``: from queueing to the start of that batch;
* ``rendition.encode`` (sentence encoder) or ``rendition.decode`` (translator: its encoder pass
  and the beam search, one model call): the batch's model time, with the batch's size and tokens.

The translator's continuous engine (``rendition.service.translation_engine``) has no batches: per request,
``rendition.queue_wait`` runs from submission until its first sentence joins a running search
and ``rendition.decode`` from then until its last sentence is done (``record_request``).

The spans are written once the work has finished, with the times it measured, so the model
threads pay nothing; with tracing off ``capture``, ``record_batch`` and ``record_request`` return
at once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

EXCLUDED_URLS = "/health/live,/health/ready,/metrics"
SPAN_NAMES = {"encoder": "rendition.encode", "translator": "rendition.decode"}

_tracer: Any = None  # an opentelemetry Tracer once setup() turned tracing on


def enabled_by_env() -> bool:
    return any(os.environ.get(v, "").strip() for v in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def setup(app: Any, tracer_provider: Any = None) -> bool:
    """Instrument ``app`` when tracing is configured (or a ``tracer_provider`` is given, e.g. by
    tests); return whether it is on."""
    global _tracer
    if tracer_provider is None and not enabled_by_env():
        return False
    try:
        from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise RuntimeError(f"OTEL_EXPORTER_OTLP_ENDPOINT is set but {e.name} is missing: pip install 'rendition[otel]'") from e
    if tracer_provider is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        name = os.environ.get("OTEL_SERVICE_NAME") or "rendition"
        tracer_provider = TracerProvider(resource=Resource.create({"service.name": name}))
        tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    FastAPIInstrumentor.instrument_app(app, tracer_provider=tracer_provider, excluded_urls=EXCLUDED_URLS)
    _tracer = tracer_provider.get_tracer("rendition")
    return True


def capture() -> Any:
    """The current (request's) trace context if it is being traced, else None; the batcher keeps
    it with each request's sentences."""
    if _tracer is None:
        return None
    from opentelemetry import context, trace

    return context.get_current() if trace.get_current_span().is_recording() else None


def record_batch(model: str, batch: Sequence[Any], start: float, end: float) -> None:
    """Spans for one finished batch: ``batch`` holds the batcher's items (``.job.trace``,
    ``.enqueued``, ``.tokens``); ``start`` / ``end`` are ``time.perf_counter()`` values."""
    if _tracer is None:
        return
    jobs: dict[int, list] = {}  # per traced request: [context, first enqueue time, sentences]
    for it in batch:
        ctx = it.job.trace
        if ctx is not None:
            entry = jobs.setdefault(id(it.job), [ctx, it.enqueued, 0])
            entry[1] = min(entry[1], it.enqueued)
            entry[2] += 1
    if not jobs:
        return
    offset = time.time_ns() - time.perf_counter_ns()  # perf_counter seconds -> epoch nanoseconds

    def ns(t: float) -> int:
        return int(t * 1e9) + offset

    batch_attrs = {"rendition.model": model, "rendition.batch_size": len(batch), "rendition.batch_tokens": sum(it.tokens for it in batch)}
    for ctx, enqueued, sentences in jobs.values():
        attrs = {"rendition.model": model, "rendition.sentences": sentences}
        _tracer.start_span("rendition.queue_wait", context=ctx, start_time=ns(enqueued), attributes=attrs).end(end_time=ns(start))
        span = _tracer.start_span(SPAN_NAMES.get(model, f"rendition.{model}"), context=ctx, start_time=ns(start), attributes=attrs | batch_attrs)
        span.end(end_time=ns(end))


def record_request(model: str, ctx: Any, submitted: float, started: float, end: float, sentences: int, tokens: int) -> None:
    """Spans for one request that ran in continuous searches: queued from ``submitted`` until its
    first sentence joined (``started``), decoding until ``end`` (``time.perf_counter()`` values)."""
    if _tracer is None or ctx is None:
        return
    offset = time.time_ns() - time.perf_counter_ns()
    attrs = {"rendition.model": model, "rendition.sentences": sentences}
    _tracer.start_span("rendition.queue_wait", context=ctx, start_time=int(submitted * 1e9) + offset, attributes=attrs).end(
        end_time=int(started * 1e9) + offset
    )
    span = _tracer.start_span(
        SPAN_NAMES.get(model, f"rendition.{model}"), context=ctx, start_time=int(started * 1e9) + offset,
        attributes=attrs | {"rendition.tokens": tokens},
    )  # fmt: skip
    span.end(end_time=int(end * 1e9) + offset)
