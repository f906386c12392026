"""Connection-level defences and the checks made before a request's body is read.

uvicorn settings (``uvicorn_options``), each a ``RENDITION_*`` setting (docs/configuration.md):

    RENDITION_MAX_HEADER_BYTES  request line + headers (``GuardedHttpToolsProtocol``): beyond it 400
    RENDITION_KEEP_ALIVE_S      an idle keep-alive connection is closed (uvicorn ``timeout_keep_alive``)
    RENDITION_MAX_CONNECTIONS   open connections + running requests (uvicorn ``limit_concurrency``): beyond it 503
    RENDITION_HEADER_TIMEOUT_S  ``GuardedHttpToolsProtocol``: a connection must deliver a complete request line
                                and headers within this of opening (or of its previous response), else
                                408 and closed - a client that sends nothing, or a byte a second, is cut off

The protocol is uvicorn's httptools implementation (a C parser; h11 parses in Python on the event
loop) with the header size limit, which httptools lacks, and one timer added.  In the ASGI app
(``ServiceMiddleware``):

    RENDITION_MAX_HEADERS       header fields per request: beyond it 431 (``Gate``)
    RENDITION_BODY_TIMEOUT_S    the body must arrive within this of the headers: else 408 (middleware)

``Gate`` also answers, before the body is read: 401/403 for a missing or wrong API key on a
protected route (an API key in a LibreTranslate body is still accepted: those routes are checked
here only when the body cannot carry one), and 429 with ``Retry-After`` when the model's queue is
full or the estimated work in flight already fills the request timeout (``rendition.service.admission``).
Memory of an abandoned upload is given back to the OS (``release_memory``: glibc ``malloc_trim``).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.types import Scope
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from rendition.service.deps import BODY_RECEIVED, ON_DISCONNECT, AppState, auth_error, key_is_valid, require_api_key
from rendition.service.errors import APIError
from rendition.service.queues import Queue
from rendition.service.routers.ui import wants_html
from rendition.service.settings import Settings

log = logging.getLogger("rendition.connections")


class HeadTooLarge(Exception):
    """A request line and headers over ``max_header_bytes`` (raised from the parser's callbacks)."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a size limit on each request's line and headers and a
    deadline for them.  httptools (llhttp) keeps no limit of its own: the bytes are counted here,
    parsed (the URL and each header as the parser completes them) and raw (what arrived while a
    request's headers are still incomplete, e.g. one endless header)."""

    header_timeout_s: float = 10.0  # both set by ``uvicorn_options`` (a subclass per server)
    max_header_bytes: int = 16384

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._head_size = 0  # the current request's line and headers, as parsed
        self._raw_size = 0  # bytes received while its headers were incomplete
        self._heads = 0  # requests whose headers are complete
        self._head_pending = True
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_timed_out)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def data_received(self, data: bytes) -> None:
        pending, heads = self._head_pending, self._heads
        super().data_received(data)
        if pending and self._head_pending and heads == self._heads and not self.transport.is_closing():
            self._raw_size += len(data)  # (all of it is the incomplete request's line and headers)
            if self._raw_size > self.max_header_bytes:
                self.send_400_response("")

    def _grow(self, size: int) -> None:
        self._head_size += size
        if self._head_size > self.max_header_bytes:
            raise HeadTooLarge

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_size = 0
        self.scope[ON_DISCONNECT] = []  # type: ignore[literal-required]

    def on_url(self, url: bytes) -> None:
        self._grow(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._grow(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_pending, self._raw_size = False, 0
        self._heads += 1
        self._disarm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.scope[BODY_RECEIVED] = True  # type: ignore[literal-required]  # (no body deadline to arm: ServiceMiddleware)
        self._head_pending = True  # the next request's, on this connection

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self._head_pending and not self.transport.is_closing():
            self._arm()  # the next request on this connection gets its own deadline

    def send_400_response(self, msg: str) -> None:
        if max(self._head_size, self._raw_size) > self.max_header_bytes:
            msg = f"request line and headers over {self.max_header_bytes} bytes (RENDITION_MAX_HEADER_BYTES)"
        super().send_400_response(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        cycle = self.cycle
        super().connection_lost(exc)
        if cycle is not None and cycle.disconnected:  # (a request still unanswered)
            calls: list[Callable[[], None]] = cycle.scope.get(ON_DISCONNECT) or []  # type: ignore[assignment]
            for call in calls:
                call()

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self._head_pending:
            return
        msg = f"request headers not received within {self.header_timeout_s:g} s (RENDITION_HEADER_TIMEOUT_S)\n".encode()
        self.transport.write(
            b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
            b"content-length: " + str(len(msg)).encode() + b"\r\n\r\n" + msg
        )
        self.transport.close()


def uvicorn_options(settings: Settings) -> dict:
    """The uvicorn.Config keyword arguments of the connection limits."""
    limits = {"header_timeout_s": settings.header_timeout_s, "max_header_bytes": settings.max_header_bytes}
    return dict(
        http=type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), limits),
        timeout_keep_alive=settings.keep_alive_s,
        limit_concurrency=settings.max_connections,
    )


# -- memory of abandoned uploads ----------------------------------------------------------------

_libc = None
_last_trim = 0.0
_trim_pending = False


def _trim() -> None:
    global _libc, _last_trim, _trim_pending
    _last_trim, _trim_pending = time.monotonic(), False
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name) if name else False
    if isinstance(_libc, ctypes.CDLL) and hasattr(_libc, "malloc_trim"):
        _libc.malloc_trim(0)


def release_memory(min_interval_s: float = 1.0) -> None:
    """Give freed heap memory back to the OS (glibc ``malloc_trim``): the chunks of an abandoned
    upload are freed by Python but stay in the heap.  At most once per interval; a call inside the
    interval schedules one trim at its end (so the last of a burst of abandoned uploads is covered)."""
    global _trim_pending
    wait = _last_trim + min_interval_s - time.monotonic()
    if wait <= 0:
        _trim()
    elif not _trim_pending:
        _trim_pending = True
        asyncio.get_running_loop().call_later(wait, _trim)


# -- checks before the body is read ----------------------------------------------------------------

LIBRETRANSLATE_BODY_KEY = ("/translate", "/detect", "/translate_file")  # these routes also take api_key in the body
BODY_TYPES = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data", "")
NO_BATCHER = ("/tokenize", "/decode", "/detect")  # protected, but no model queue behind them


_COUNTED = "rendition.gate_model"  # scope key: the model whose request count this request holds


class Gate:
    """``gate(scope) -> APIError | None``, run by ``ServiceMiddleware`` before it reads the body;
    ``gate.release(scope)`` when the request has been answered."""

    def __init__(self, state: AppState, routers: Sequence[APIRouter]):
        self.state = state
        self.protected: set[str] = set()
        self.model_of: dict[str, str] = {}
        for router in routers:
            for route in router.routes:
                if not isinstance(route, APIRoute):
                    continue
                if any(d.dependency is require_api_key for d in (*router.dependencies, *route.dependencies)):
                    self.protected.add(route.path)
                if "POST" in (route.methods or ()) and route.path not in NO_BATCHER:
                    tags = {*router.tags, *route.tags}
                    if tags & {"translation", "libretranslate"}:
                        self.model_of[route.path] = "translator"
                    elif tags & {"embeddings", "tei"}:
                        self.model_of[route.path] = "encoder"

    def __call__(self, scope: Scope) -> APIError | None:
        settings = self.state.settings
        headers = scope["headers"]
        if len(headers) > settings.max_headers:
            return APIError(
                431, f"{len(headers)} header fields; the limit is {settings.max_headers} (RENDITION_MAX_HEADERS)",
                kind="too_many_headers",
            )
        path = scope["path"]
        preflight = scope["method"] == "OPTIONS"  # a CORS preflight carries no credentials
        if settings.api_keys and not preflight and (err := self._auth(scope["method"], path, headers, settings)) is not None:
            return err
        return self._overload(scope) if scope["method"] == "POST" else None

    def _auth(self, method: str, path: str, headers: list[tuple[bytes, bytes]], settings: Settings) -> APIError | None:
        body_key = path in LIBRETRANSLATE_BODY_KEY
        if path not in self.protected and not body_key:
            return None
        auth, ctype, accept = "", "", ""
        for k, v in headers:
            if k == b"authorization":
                auth = v.decode("latin-1")
            elif k == b"content-type":
                ctype = v.decode("latin-1").split(";")[0].strip().lower()
            elif k == b"accept":
                accept = v.decode("latin-1")
        if path == "/" and method == "GET" and wants_html(accept):
            return None  # the web page (rendition.service.routers.ui), open like /ui; TEI's route is POST /
        scheme, _, token = auth.partition(" ")
        if key_is_valid(settings, token.strip() if scheme.lower() == "bearer" else None):
            return None
        if body_key and ctype in BODY_TYPES:
            return None  # the key may be in the body: the route checks it once parsed
        return auth_error()

    def _queues(self, model: str) -> list[Queue[Any, Any]]:
        """The queues a request to ``model``'s routes may end in: every translator's for a
        translation (its pair is in the body, not read yet), the encoder's for an embedding."""
        if model == "translator":
            return [q for name, q in self.state.queues.items() if name in self.state.translators]
        return [q] if (q := self.state.queues.get(model)) is not None else []

    def _overload(self, scope: Scope) -> APIError | None:
        model = self.model_of.get(scope["path"])
        queues = self._queues(model) if model else []
        if not queues or model is None:
            return None
        ledger = self.state.ledger
        room, running = sum(q.max_queue for q in queues), sum(q.max_batch_size for q in queues)
        if all(q.queued >= q.max_queue for q in queues) or ledger.crowded(model, room, running):
            # (only when no queue has room: one pair's full queue is its own requests' 429, once read)
            retry = str(min(q.retry_after() for q in queues))
            return APIError(
                429, f"the {model} queue is full; retry in {retry} s", kind="queue_full", headers={"Retry-After": retry}
            )
        if model == "translator" and ledger.full(pending := ledger.pending(model)):
            return ledger.overloaded(pending)
        ledger.requests[model] += 1
        scope[_COUNTED] = model
        return None

    def release(self, scope: Scope) -> None:
        """The request that passed the gate has been answered (``ServiceMiddleware``'s finally)."""
        model = scope.pop(_COUNTED, None)
        if model is not None:
            self.state.ledger.requests[model] -= 1
