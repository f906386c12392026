"""Who may read ``/metrics``, and the small second server that serves it on its own port.

* ``RENDITION_METRICS_TOKEN``: ``/metrics`` answers 401 unless the request carries
  ``Authorization: Bearer <token>`` (compared in constant time), on whichever port serves it.
* ``RENDITION_METRICS_PORT``: ``/metrics`` moves to a second HTTP server in the same process
  (``metrics_app`` below, run by ``rendition.service.main``), so the API port can be exposed while the
  metrics port stays on the cluster network; the API port then answers 404 for ``/metrics``.
"""

from __future__ import annotations

import hmac

from prometheus_client import CollectorRegistry, make_asgi_app
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from rendition.service.settings import Settings

METRICS_PATH = "/metrics"
UNAUTHORIZED = "missing or invalid metrics token (send 'Authorization: Bearer <RENDITION_METRICS_TOKEN>')"


def metrics_token_ok(settings: Settings, authorization: str | None) -> bool:
    """True when no token is configured, or ``authorization`` is ``Bearer <the token>``."""
    if settings.metrics_token is None:
        return True
    scheme, _, presented = (authorization or "").partition(" ")
    expected = settings.metrics_token.get_secret_value().encode()
    return scheme.lower() == "bearer" and hmac.compare_digest(expected, presented.strip().encode("utf-8", "replace"))


def unauthorized() -> JSONResponse:
    return JSONResponse(
        {"detail": UNAUTHORIZED},
        status_code=401,
        headers={"WWW-Authenticate": "Bearer"},
    )


def metrics_app(registry: CollectorRegistry, settings: Settings) -> ASGIApp:
    """ASGI app for the metrics port: ``GET /metrics`` (token-checked), 404 for any other path."""
    exposition = make_asgi_app(registry)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan is off for this server; nothing else is expected
            return
        if scope["path"] != METRICS_PATH:
            response = JSONResponse({"detail": f"not found; this port serves only {METRICS_PATH}"}, status_code=404)
        elif not metrics_token_ok(settings, _header(scope, b"authorization")):
            response = unauthorized()
        else:
            await exposition(scope, receive, send)
            return
        await response(scope, receive, send)

    return app


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None
