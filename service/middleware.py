"""Pure-ASGI middleware (no BaseHTTPMiddleware, so streaming and disconnects pass straight through):

* request id: ``X-Request-ID`` taken from the request (when sane) or generated, echoed back, and
  put on every log line of the request;
* body limit: a body over ``max_body_bytes`` gets 413 before any route sees it (checked on
  Content-Length and again while reading, for chunked bodies); routes with a limit of their own
  (file uploads, ``body_limits``) are checked against it instead;
* gate: ``gate(scope)`` (``service.connections.Gate``) may answer before the body is read (header
  count, API key, overload); a body that does not arrive within ``body_timeout_s`` gets 408, and
  the memory of an abandoned upload is released;
* metrics: request count and latency by method, route template and status, requests in flight;
* one JSON access-log line per request (method, route, status, duration; never the body).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
import time
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from rendition.service.connections import Gate, release_memory
from rendition.service.deps import BODY_RECEIVED
from rendition.service.errors import error_response
from rendition.service.logs import access, request_id
from rendition.service.metrics import Metrics

T = TypeVar("T")
_RID = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")
_RID_PREFIX = uuid.uuid4().hex[:16]  # a generated id: this process's random prefix and a sequence number
_RID_SEQUENCE = itertools.count()


def new_request_id() -> str:
    """32 hex digits, unique per process and (by the random prefix) across processes; no system
    call per request (``uuid4`` reads os.urandom, which releases the GIL on the event loop)."""
    return f"{_RID_PREFIX}{next(_RID_SEQUENCE):016x}"


async def _within(seconds: float | None, work: Coroutine[Any, Any, T]) -> T:
    """``await work`` under a deadline (``asyncio.TimeoutError`` past it): on Python >= 3.11 a
    deadline on this task (``asyncio.timeout``), where ``asyncio.wait_for`` makes a task per call."""
    if sys.version_info < (3, 11):
        return await asyncio.wait_for(work, seconds)
    async with asyncio.timeout(seconds):
        return await work


class ServiceMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        metrics: Metrics,
        max_body_bytes: int,
        known_paths: frozenset[str] = frozenset(),
        gate: Gate | None = None,
        body_timeout_s: float | None = None,
        body_limits: dict[str, tuple[int, str]] | None = None,
    ):
        self.app = app
        self.gate = gate
        self.body_timeout = body_timeout_s
        self.metrics = metrics
        self.max_body = max_body_bytes
        self.body_limits = body_limits or {}  # path -> (limit, its setting) for routes with their own (file uploads)
        self.known_paths = known_paths  # label values for the in-flight gauge (others: "unmatched")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        rid = headers.get(b"x-request-id", b"").decode("latin-1")
        rid = rid if _RID.match(rid) else new_request_id()
        token = request_id.set(rid)
        start = time.perf_counter()
        method, path = scope["method"], scope["path"]
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        in_flight = self.metrics.in_flight_of(path if path in self.known_paths else "unmatched")
        in_flight.inc()
        try:
            refused = self.gate(scope) if self.gate is not None else None
            if refused is not None:  # decided on the headers alone: the body is never read
                self.metrics.errors.labels(refused.kind).inc()
                await error_response(path, refused.status, refused.message, headers=refused.headers)(
                    scope, receive, send_wrapper
                )
                return
            try:
                limit, limit_name = self.body_limits.get(path, (self.max_body, "RENDITION_MAX_BODY_BYTES"))
                reading = self._limited_body(scope, receive, headers, limit)
                # (a body the service's protocol already holds whole is read at once: no deadline to keep)
                body_receive = await (reading if scope.get(BODY_RECEIVED) else _within(self.body_timeout, reading))
            except asyncio.TimeoutError:
                self.metrics.errors.labels("body_timeout").inc()
                release_memory()
                msg = f"request body not received within {self.body_timeout:g} s (RENDITION_BODY_TIMEOUT_S)"
                await error_response(path, 408, msg, headers={"Connection": "close"})(scope, receive, send_wrapper)
                return
            if body_receive is None:
                self.metrics.errors.labels("body_too_large").inc()
                msg = f"request body larger than the limit of {limit} bytes ({limit_name})"
                await error_response(path, 413, msg)(scope, receive, send_wrapper)
            else:
                await self.app(scope, body_receive, send_wrapper)
        finally:
            if self.gate is not None:
                self.gate.release(scope)
            in_flight.dec()
            route_name = getattr(scope.get("route"), "path", None) or "unmatched"
            elapsed = time.perf_counter() - start
            self.metrics.answered(method, route_name, status, elapsed)
            access(method, route_name, status, elapsed)
            request_id.reset(token)

    async def _limited_body(
        self, scope: Scope, receive: Receive, headers: dict[bytes, bytes], limit: int
    ) -> Receive | None:
        """Read the whole body (up to the limit) and return a receive() that replays it; None if too large."""
        length = headers.get(b"content-length")
        if length is not None:
            try:
                if int(length) > limit:
                    return None
            except ValueError:
                pass
        if scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE") and length is None:
            return receive
        messages: list[Message] = []
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                messages = [message]  # abandoned upload: drop what was read and give the memory back
                release_memory()
                break
            size += len(message.get("body", b""))
            if size > limit:
                return None
            if not message.get("more_body", False):
                break
        body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")
        replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
        replay += [m for m in messages if m["type"] != "http.request"]

        async def replay_receive() -> Message:
            if replay:
                return replay.pop(0)
            return await receive()  # after the body: waits for http.disconnect

        return replay_receive
