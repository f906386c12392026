"""The app's routes: every endpoint and dependency is ``async def``, so none of them is handed to
FastAPI's thread pool (a thread hand-off per request that, under load, waits for a core the
model's workers hold)."""

from __future__ import annotations

import inspect

from fastapi.routing import APIRoute

from rendition.service.app import create_app
from rendition.service.settings import Settings


def _calls(dependant) -> list:
    out = [dependant.call] if dependant.call is not None else []
    for d in dependant.dependencies:
        out += _calls(d)
    return out


def _api_routes(routes) -> list[APIRoute]:
    """The app's APIRoutes, through included routers (FastAPI >= 0.16x wraps them)."""
    out: list[APIRoute] = []
    for r in routes:
        if isinstance(r, APIRoute):
            out.append(r)
        elif (inner := getattr(r, "original_router", None) or r) is not None and hasattr(inner, "routes"):
            out += _api_routes(inner.routes)
    return out


def test_no_route_runs_on_the_thread_pool() -> None:
    app = create_app(Settings(models=[]))
    routes = _api_routes(app.routes)
    assert len(routes) > 10
    sync = sorted(
        {
            f"{r.path}: {getattr(c, '__qualname__', c)}"
            for r in routes
            for c in _calls(r.dependant)
            if not inspect.iscoroutinefunction(c)
        }
    )
    assert sync == []
