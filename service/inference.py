"""The inference facade: the one place routes hand work to the models.

``translate`` / ``embed`` take a job (``service.engines.TranslationJob`` / ``EmbeddingJob``) and
return its typed result; in between: the engine (404 when disabled, 503 while loading), its
``pre``, the queue key and costs, the model's queue (``service.queues.Queue``: the translator's
step-level scheduler, the encoder's batcher) with the request's timeout, client-disconnect and
drain-deadline handling (``run_queued``), and ``post``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Hashable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from fastapi import Request

from rendition.model.translation.pairs import Leg, UnsupportedPair
from rendition.service.deps import ON_DISCONNECT, AppState, engine_or_503, translator_queue
from rendition.service.engines import (
    EmbeddingJob,
    EmbeddingOutput,
    Engine,
    TranslationEngine,
    TranslationJob,
    TranslationOutput,
    UnsupportedLanguagePair,
)
from rendition.service.errors import APIError
from rendition.service.queues import BatcherClosed, BatchFailed, Queue, QueueFull
from rendition.service.settings import Settings

log = logging.getLogger("rendition.inference")

J = TypeVar("J")  # the job
K = TypeVar("K", bound=Hashable)  # the queue key
R = TypeVar("R")  # one sentence's raw result
Out = TypeVar("Out")  # the job's result
E = TypeVar("E", bound=Engine[Any, Any, Any, Any])

Progress = Callable[[int, int], None]  # sentence i is done after this many model passes (decoding steps)
Admit = Callable[[E, list[list[int]]], AbstractContextManager[Progress | None]]


async def run(
    request: Request,
    settings: Settings,
    engine: Engine[J, K, R, Out],
    queue: Queue[K, R],
    job: J,
    admit: Callable[[list[list[int]]], AbstractContextManager[Progress | None]] | None = None,
    admitted: bool = False,
) -> Out:
    """One job through ``engine`` and its ``queue`` (``engine_or_503``).

    ``admit(ids)``, when given, runs after ``pre`` and before the queue: it may refuse the job
    (raise) and returns a context held while the job runs (the admission ledger), whose value,
    when not None, is told of each sentence as the model finishes it."""
    ids = engine.pre(job)
    key = engine.key(job)
    costs = [engine.cost(x, key) for x in ids]
    with admit(ids) if admit is not None else contextlib.nullcontext() as progress:
        raw = await run_queued(
            request, settings, queue, ids, costs, key=key, tokens=[len(x) for x in ids], progress=progress, admitted=admitted
        )
    return engine.post(job, ids, raw)


def _pair_error(e: ValueError) -> APIError:
    return APIError(400, str(e), kind="unsupported_language_pair", param="target")


def route(state: AppState, source: str, target: str) -> list[Leg[str]]:
    """The translators (their queues' names) that translate ``source`` -> ``target``: one, or two
    through English; 400 naming the loaded pairs when none do (503 while they load)."""
    engine_or_503(state, "translator")
    try:
        return state.pairs.route(source, target)
    except UnsupportedPair as e:
        raise _pair_error(e) from None


def check_pair(state: AppState, source: str, target: str) -> None:
    """400 unless the loaded translators translate ``source`` -> ``target``, directly or through
    English (503 while they load)."""
    route(state, source, target)


async def translate(
    request: Request,
    state: AppState,
    settings: Settings,
    job: TranslationJob,
    admit: Admit[TranslationEngine] | None = None,
) -> TranslationOutput:
    """``InputTooLong`` (a sentence over the input limit) and ``TranslationTooLong`` pass through:
    the route maps them to its own field and sentence.  The job goes to the translator of its pair
    (``route``: a pair only reached through English is two jobs, ``rendition.service.translation``).
    ``admit(engine, ids)``: see ``run``."""
    try:
        legs = route(state, job.source, job.target)
        if len(legs) != 1:
            raise UnsupportedLanguagePair(f"{job.source}-{job.target} goes through English: two jobs, one per leg")
        engine, queue = translator_queue(state, legs[0].translator)
        return await run(
            request, settings, engine, queue, job, None if admit is None else functools.partial(admit, engine), job.admitted
        )
    except UnsupportedLanguagePair as e:
        raise _pair_error(e) from None


async def embed(request: Request, state: AppState, settings: Settings, job: EmbeddingJob) -> EmbeddingOutput:
    engine, queue = engine_or_503(state, "encoder")
    return await run(request, settings, engine, queue, job)


# -- a request's sentences through a queue ---------------------------------------------------------


async def _watch_disconnect(request: Request, stop: Callable[[str], None]) -> None:
    """``stop("disconnected")`` when the client goes away (the body has already been read, so the
    next ASGI message is http.disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            stop("disconnected")
            return


async def _submit_in_chunks(
    queue: Queue[K, R],
    max_queue: int,
    payloads: Sequence[list[int]],
    costs: Sequence[int],
    key: K,
    tokens: Sequence[int] | None,
    progress: Progress | None,
    admitted: bool = False,
) -> list[R]:
    if len(payloads) <= max_queue:
        return await queue.submit(payloads, costs, key, tokens, progress, admitted=admitted)
    step = max(1, max_queue // 2)
    out: list[R] = []
    for i in range(0, len(payloads), step):
        part = slice(i, i + step)
        shifted = None if progress is None else functools.partial(_shifted, progress, i)
        out += await queue.submit(payloads[part], costs[part], key, None if tokens is None else tokens[part], shifted, admitted=admitted)
    return out


def _shifted(progress: Progress, offset: int, i: int, steps: int) -> None:
    progress(offset + i, steps)


async def run_queued(
    request: Request,
    settings: Settings,
    queue: Queue[K, R],
    payloads: Sequence[list[int]],
    costs: Sequence[int],
    key: K,
    tokens: Sequence[int] | None = None,
    progress: Progress | None = None,
    admitted: bool = False,
) -> list[R]:
    """Queue a request's sentences, wait for their results (``progress(i, steps)`` as each is done); map overload/timeout/disconnect/model
    errors to 429/504/499/500.  A timeout or a disconnect drops the sentences still queued.  A
    request with more sentences than the queue holds (RENDITION_MAX_QUEUE) is queued in chunks of
    half the queue, each after the one before has finished."""
    state: AppState = request.app.state.rendition
    state.ledger.observe(queue.name, len(payloads))  # sentences per request, for the gate (rendition.service.connections)
    # The request's own task awaits the work; a timeout, a disconnect or the drain deadline cancels
    # it with the reason (a timer, a callback on the connection and one on the deadline, where
    # waiting on three tasks cost the event loop a tenth of a one-sentence request).  The reason
    # becomes the `reason` label of rendition_dropped_sentences_total (the queue reads it from the
    # CancelledError).
    task = asyncio.current_task()
    assert task is not None
    why: list[str] = []

    def stop(reason: str) -> None:
        if not why:
            why.append(reason)
            task.cancel(msg=reason)

    loop = asyncio.get_running_loop()
    timer = loop.call_later(settings.request_timeout_s, stop, "timeout")
    hooks = request.scope.get(ON_DISCONNECT)  # (the service's own protocol; else a task waits for http.disconnect)
    if hooks is not None:
        hooks.append(functools.partial(stop, "disconnected"))
    gone = None if hooks is not None else loop.create_task(_watch_disconnect(request, stop))
    state.deadline.watch(stop)
    try:
        try:
            out = await _submit_in_chunks(queue, settings.max_queue, payloads, costs, key, tokens, progress, admitted)
        except asyncio.CancelledError:
            if not why:
                raise  # (not ours: the server's own cancellation)
            # Python >= 3.11: this cancellation is answered here, not propagated (unless another
            # one, the server's, came too)
            if hasattr(task, "uncancel") and task.uncancel() > 0:
                raise
        else:
            why.append("done")  # (a timer or watcher firing from now on changes nothing)
            return out
    except QueueFull as e:
        raise APIError(429, str(e), kind="queue_full", headers={"Retry-After": str(e.retry_after)}) from None
    except BatchFailed as e:
        raise APIError(500, str(e), kind="model_error") from None
    except BatcherClosed as e:
        raise APIError(503, str(e), kind="shutting_down") from None
    finally:
        timer.cancel()
        if gone is not None:
            gone.cancel()
        state.deadline.unwatch(stop)
    if why[0] == "disconnected":
        raise APIError(499, "client closed the request", kind="client_disconnected")
    if why[0] == "shutdown":
        state.metrics.shutdown_cancelled.inc()
        log.warning("request cancelled at the drain deadline", extra={"deadline_s": settings.drain_deadline_s})
        raise APIError(
            503,
            f"the server is shutting down and this request did not finish within the drain deadline of "
            f"{settings.drain_deadline_s:g} s (RENDITION_DRAIN_DEADLINE_S); retry it, another instance will answer",
            kind="shutdown_deadline",
            headers={"Retry-After": "1"},
        )
    raise APIError(
        504, f"no result within {settings.request_timeout_s} s (RENDITION_REQUEST_TIMEOUT_S)", kind="timeout"
    )
