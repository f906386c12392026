"""Dependencies and helpers shared by the routers: settings, app state, API keys, input limits and
the engine of a model (404 when disabled, 503 while loading).  Running a job through a model's
queue, with the request's timeout and client-disconnect handling, is ``rendition.service.inference``'s."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, overload

import numpy as np
from fastapi import Depends, Request

from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.pairs import PairTable
from rendition.model.translation.search import Hypothesis
from rendition.service.admission import Ledger
from rendition.service.engines import EmbeddingEngine, TranslationEngine
from rendition.service.errors import APIError, invalid
from rendition.service.metrics import Metrics
from rendition.service.queues import Queue
from rendition.service.settings import Settings

# A request's scope key under the service's HTTP protocol (``rendition.service.connections``): the
# calls it makes should the client go away before the request is answered
# (``rendition.service.inference.run_queued``), where a task waiting for the ASGI http.disconnect
# message would be one more task per request.
ON_DISCONNECT = "rendition.on_disconnect"
BODY_RECEIVED = "rendition.body_received"  # scope key: True once the service's protocol holds the whole body


class Deadline:
    """The drain deadline: set once; each request's work watches it and is stopped then
    (``rendition.service.inference.run_queued``: 503 + Retry-After)."""

    def __init__(self) -> None:
        self._set = False
        self._watchers: set[Callable[[str], None]] = set()

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        for stop in list(self._watchers):
            stop("shutdown")

    def watch(self, stop: Callable[[str], None]) -> None:
        """``stop("shutdown")`` at the deadline (at once when it has passed)."""
        if self._set:
            stop("shutdown")
        else:
            self._watchers.add(stop)

    def unwatch(self, stop: Callable[[str], None]) -> None:
        self._watchers.discard(stop)


@dataclass
class AppState:
    settings: Settings
    metrics: Metrics
    translator: TranslationEngine | None = None  # the first translator loaded (the only one of a single pair)
    # every translator by its queue's name ("translator" first), and the routing of a pair to them
    translators: dict[str, TranslationEngine] = field(default_factory=dict)
    pairs: PairTable[str] = field(default_factory=lambda: PairTable[str]([]))
    encoder: EmbeddingEngine | None = None
    queues: dict[str, Queue[Any, Any]] = field(default_factory=dict)  # "translator" (scheduler) / "encoder" (batcher)
    ready: bool = False
    draining: bool = False
    load_error: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    model_thread: ThreadPoolExecutor | None = None  # loads and warms up the models (rendition.service.app)
    embedding_thread: ThreadPoolExecutor | None = None  # the encoder's batches
    ledger: Ledger = field(default_factory=lambda: Ledger(0.0))  # estimated work in flight (rendition.service.admission)
    deadline: Deadline = field(default_factory=lambda: Deadline())  # set at the drain deadline: running work -> 503


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


# -- models ------------------------------------------------------------------------------------------


TranslatorQueue = Queue[TranslationOptions, list[Hypothesis]]  # a sentence's n-best hypotheses
EncoderQueue = Queue[None, np.ndarray]  # a sentence's raw vector


@overload
def engine_or_503(state: AppState, name: Literal["translator"]) -> tuple[TranslationEngine, TranslatorQueue]: ...


@overload
def engine_or_503(state: AppState, name: Literal["encoder"]) -> tuple[EmbeddingEngine, EncoderQueue]: ...


def engine_or_503(state: AppState, name: Literal["translator", "encoder"]) -> tuple[Any, Queue[Any, Any]]:
    """The engine of ``name`` ("translator" / "encoder") and its queue; 404 when the model is not
    enabled, 503 while it loads."""
    engine = getattr(state, name)
    if engine is None or name not in state.queues:
        if state.ready:
            raise APIError(
                404, f"the {name} model is not enabled on this server (RENDITION_MODELS)", kind="model_disabled"
            )
        raise APIError(
            503, f"the {name} model is loading; retry shortly", kind="not_ready", headers={"Retry-After": "1"}
        )
    return engine, state.queues[name]


def translator_queue(state: AppState, name: str) -> tuple[TranslationEngine, TranslatorQueue]:
    """The translator whose queue is ``name`` (a leg of ``AppState.pairs``' routes) and that queue;
    404/503 as ``engine_or_503``."""
    engine_or_503(state, "translator")
    return state.translators[name], state.queues[name]


def loaded_pairs(state: AppState) -> PairTable[str]:
    """The routing of the loaded translators (404/503 as ``engine_or_503``)."""
    engine_or_503(state, "translator")
    return state.pairs


def loaded_languages(state: AppState) -> tuple[str, ...]:
    """Every language of the loaded translators (``source: "auto"`` detects among them)."""
    return loaded_pairs(state).languages
