"""Dependencies and helpers shared by the routers: settings, app state, API keys, and running one
request's sentences through a batcher with a timeout and client-disconnect detection."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fastapi import Depends, Request

from service.admission import Ledger
from service.batcher import Batcher, BatcherClosed, BatchFailed, QueueFull
from service.engines import EmbeddingEngine, TranslationEngine
from service.errors import APIError, invalid
from service.metrics import Metrics
from service.scheduler import TranslationQueue
from service.settings import Settings

log = logging.getLogger("rendition.deps")


@dataclass
class AppState:
    settings: Settings
    metrics: Metrics
    translator: TranslationEngine | None = None
    encoder: EmbeddingEngine | None = None
    batchers: dict[str, Batcher | TranslationQueue] = field(default_factory=dict)  # "translator" / "encoder"
    ready: bool = False
    draining: bool = False
    load_error: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    model_thread: ThreadPoolExecutor | None = None  # loads and warms up the models (service.app); the batch engine's batches
    embedding_thread: ThreadPoolExecutor | None = None  # the encoder's batches
    ledger: Ledger = field(default_factory=lambda: Ledger(0.0))  # estimated work in flight (service.admission)
    deadline: asyncio.Event = field(default_factory=asyncio.Event)  # set at the drain deadline: running work -> 503


# The dependencies are ``async def``: FastAPI runs a plain ``def`` dependency on its thread pool,
# a thread hand-off per request and dependency that, under load, waits for a core the model's
# workers hold.


async def get_settings(request: Request) -> Settings:
    return request.app.state.settings


async def get_state(request: Request) -> AppState:
    return request.app.state.rendition


# -- API keys ---------------------------------------------------------------------------------------


def key_is_valid(settings: Settings, presented: str | None) -> bool:
    """Constant-time comparison against every configured key (no early exit)."""
    if not settings.api_keys:
        return True
    if not presented:
        return False
    ok = False
    for key in settings.api_keys:
        ok |= hmac.compare_digest(
            key.encode(), presented.encode("utf-8", "replace")
        )  # "replace": a lone surrogate is no 500
    return ok


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def auth_error() -> APIError:
    return APIError(
        401,
        "missing or invalid API key (send 'Authorization: Bearer <key>')",
        kind="auth",
        headers={"WWW-Authenticate": "Bearer"},
    )


async def require_api_key(request: Request, settings: Settings = Depends(get_settings)) -> None:
    if not key_is_valid(settings, bearer_token(request)):
        raise auth_error()


# -- input limits -----------------------------------------------------------------------------------


def as_list(
    value: str | list[str], field_name: str, settings: Settings, max_items: tuple[int, str] | None = None
) -> list[str]:
    """One text or a list -> a list, checked against RENDITION_MAX_ITEMS (or ``max_items``: the
    limit and its setting's name) and RENDITION_MAX_TEXT_CHARS."""
    texts = [value] if isinstance(value, str) else list(value)
    limit, limit_name = max_items or (settings.max_items, "RENDITION_MAX_ITEMS")
    if not texts:
        raise invalid(field_name, "must not be an empty list", "empty_input")
    if len(texts) > limit:
        raise invalid(
            field_name, f"{len(texts)} items; the limit is {limit} per request ({limit_name})", "too_many_items"
        )
    for i, t in enumerate(texts):
        where = field_name if isinstance(value, str) else [field_name, i]
        if not t.strip():
            raise invalid(where, "must not be empty", "empty_input")
        if not any(c.isprintable() and not c.isspace() for c in t):  # only control / zero-width / format characters
            raise invalid(where, "must contain visible characters (it has only control or invisible ones)", "empty_input")
        if not t.isascii():
            try:
                t.encode("utf-8")
            except UnicodeEncodeError as e:  # e.g. an unpaired surrogate escape "\\ud800" in the JSON
                raise invalid(
                    where, f"not valid Unicode text (unpaired surrogate at character {e.start})", "invalid_text"
                ) from None
        if len(t) > settings.max_text_chars:
            raise invalid(
                where,
                f"text is {len(t)} characters long; the limit is {settings.max_text_chars} (RENDITION_MAX_TEXT_CHARS)",
                "text_too_long",
            )
    return texts


# -- running work through a batcher ----------------------------------------------------------------


def engine_or_503(state: AppState, name: str) -> tuple[Any, Batcher]:
    engine = getattr(state, name)
    if engine is None or name not in state.batchers:
        if state.ready:
            raise APIError(
                404, f"the {name} model is not enabled on this server (RENDITION_MODELS)", kind="model_disabled"
            )
        raise APIError(
            503, f"the {name} model is loading; retry shortly", kind="not_ready", headers={"Retry-After": "1"}
        )
    return engine, state.batchers[name]


async def _wait_disconnect(request: Request) -> None:
    """Returns when the client goes away (the body has already been read, so the next ASGI
    message is http.disconnect)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def _submit_in_chunks(
    batcher: Batcher,
    max_queue: int,
    payloads: Sequence[Any],
    costs: Sequence[int],
    key: Hashable,
    tokens: Sequence[int] | None,
) -> list[Any]:
    if len(payloads) <= max_queue:
        return await batcher.submit(payloads, costs, key, tokens)
    step, out = max(1, max_queue // 2), []
    for i in range(0, len(payloads), step):
        part = slice(i, i + step)
        out += await batcher.submit(payloads[part], costs[part], key, None if tokens is None else tokens[part])
    return out


async def run_batched(
    request: Request,
    settings: Settings,
    batcher: Batcher,
    payloads: Sequence[Any],
    costs: Sequence[int],
    key: Hashable = None,
    tokens: Sequence[int] | None = None,
) -> list[Any]:
    """Queue a request's sentences, wait for their results; map overload/timeout/disconnect/model
    errors to 429/504/499/500.  A timeout or a disconnect drops the sentences still queued.  A
    request with more sentences than the queue holds (RENDITION_MAX_QUEUE) is queued in chunks of
    half the queue, each after the one before has finished."""
    state: AppState = request.app.state.rendition
    state.ledger.observe(batcher.name, len(payloads))  # sentences per request, for the gate (service.connections)
    work = asyncio.ensure_future(_submit_in_chunks(batcher, settings.max_queue, payloads, costs, key, tokens))
    gone = asyncio.ensure_future(_wait_disconnect(request))
    stop = asyncio.ensure_future(state.deadline.wait())  # the drain deadline (service.main)
    done: set = set()
    waited = False
    try:
        done, _ = await asyncio.wait(
            {work, gone, stop}, timeout=settings.request_timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        waited = True
    finally:
        gone.cancel()
        stop.cancel()
        if not work.done():  # the reason becomes the `reason` label of rendition_dropped_sentences_total
            reason = "disconnected" if gone in done else "shutdown" if stop in done else "timeout" if waited else "cancelled"
            work.cancel(msg=reason)
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await gone
    if work in done:
        try:
            return work.result()
        except QueueFull as e:
            raise APIError(429, str(e), kind="queue_full", headers={"Retry-After": str(e.retry_after)}) from None
        except BatchFailed as e:
            raise APIError(500, str(e), kind="model_error") from None
        except BatcherClosed as e:
            raise APIError(503, str(e), kind="shutting_down") from None
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await work
    if gone in done:
        raise APIError(499, "client closed the request", kind="client_disconnected")
    if stop in done:
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
