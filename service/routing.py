"""``LeanRoute``: FastAPI's route class for the routes every request of a busy server goes through.

FastAPI's request handler solves each route's dependency tree per request (``solve_dependencies``):
a large share of what the event loop spends on a one-sentence ``POST /v1/translate``, on the same
thread as every other request's parsing and answer (docs/benchmarks.md, the service benchmark).
This service's routes have one shape: a JSON body model, the ``Request``, maybe the ``Response`` for
headers, and ``async def`` dependencies that take only the request and each other (the app state,
the settings, the API key check).  For that shape ``LeanRoute`` plans the calls once, when the route
is built, and runs them directly; body validation and response serialisation stay FastAPI's own
(the route's ``body_field`` and ``response_field``), so an answer is byte for byte FastAPI's.

Whatever is not on the plain path goes to FastAPI's handler unchanged: a route of another shape
(then never lean), and per request a body that is not JSON or does not validate (FastAPI writes the
error), or dependency overrides (tests).  ``tests/service/test_routing.py`` compares the two.

``DirectRoutes`` (middleware, the app's innermost) then takes a request for a method and path that a
lean route has answered straight to that route's lean handler, past Starlette's routing.
"""

from __future__ import annotations

import email.message
import functools
import inspect
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import fastapi.routing
from fastapi import params
from fastapi.datastructures import DefaultPlaceholder
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute, serialize_response
from fastapi.utils import is_body_allowed_for_status_code
from starlette._exception_handler import wrap_app_handling_exceptions  # (FastAPI's routes use it too)
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_DUMP_JSON = "dump_json" in inspect.signature(serialize_response).parameters  # FastAPI >= 0.120: bytes from pydantic


# what a plain dependency or endpoint does not take (the attributes of FastAPI's ``Dependant``)
_OTHER_INPUTS = (
    "path_params", "query_params", "header_params", "cookie_params", "websocket_param_name",
    "http_connection_param_name", "background_tasks_param_name", "security_scopes_param_name", "own_oauth_scopes",
)  # fmt: skip


@dataclass(frozen=True)
class _Call:
    """An ``async def`` dependency whose parameters are the request and other such dependencies."""

    call: Callable[..., Coroutine[Any, Any, Any]]
    name: str | None  # the parameter it fills (None: a dependency of the router or decorator, its value unused)
    request_param: str | None
    needs: tuple[_Call, ...]


def _plain_call(dep: Dependant) -> _Call | None:
    if dep.call is None or not inspect.iscoroutinefunction(dep.call) or not dep.use_cache:
        return None
    if any(getattr(dep, name, None) for name in _OTHER_INPUTS + ("body_params", "response_param_name")):
        return None
    needs = [_plain_call(d) for d in dep.dependencies]
    if any(n is None for n in needs):
        return None
    return _Call(dep.call, dep.name, dep.request_param_name, tuple(n for n in needs if n is not None))


def _is_json(content_type: str | None) -> bool:
    """FastAPI's test of a JSON body (``application/json`` or ``application/*+json``)."""
    if not content_type:
        return False
    if content_type == "application/json":  # what clients send, told without parsing the header
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))


def _as_included(route: APIRoute) -> Any:
    """The route as the app includes it: FastAPI 0.16x builds an included route's handler from its
    effective context (the including router's dependencies and the app's dependency overrides),
    named by a context variable while ``get_route_handler`` runs; earlier versions copy the route."""
    var = getattr(fastapi.routing, "_effective_route_context_var", None)
    context = var.get() if var is not None else None
    return context if context is not None and getattr(context, "original_route", None) is route else route


class LeanRoute(APIRoute):
    """An ``APIRoute`` whose handler calls the endpoint's plain dependencies directly (module docstring)."""

    lean: bool  # whether requests can take the direct path (the route's shape allows it)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        full = super().get_route_handler()
        route = _as_included(self)
        endpoint = route.dependant
        needs = [_plain_call(d) for d in endpoint.dependencies]
        body_ok = route.body_field is None or (
            len(endpoint.body_params) == 1
            and not getattr(route, "_embed_body_fields", False)  # the body is the model itself, not {"name": model}
            and not isinstance(route.body_field.field_info, (params.Form, params.File))
        )
        self.lean = (
            inspect.iscoroutinefunction(endpoint.call)  # (not a generator: no streamed answers)
            and all(n is not None for n in needs)
            and body_ok
            and not any(getattr(endpoint, name, None) for name in _OTHER_INPUTS)
            and isinstance(route.response_class, DefaultPlaceholder)  # FastAPI's JSON answer, not a chosen class
        )
        if not self.lean:
            return full
        plan = tuple(n for n in needs if n is not None)
        body_field, body_name = route.body_field, endpoint.body_params[0].name if endpoint.body_params else None
        request_name, response_name = endpoint.request_param_name, endpoint.response_param_name
        overrides = route.dependency_overrides_provider
        call, status_code, response_field = endpoint.call, route.status_code, route.response_field
        assert call is not None
        serialize = functools.partial(
            serialize_response,
            field=response_field,
            include=route.response_model_include,
            exclude=route.response_model_exclude,
            by_alias=route.response_model_by_alias,
            exclude_unset=route.response_model_exclude_unset,
            exclude_defaults=route.response_model_exclude_defaults,
            exclude_none=route.response_model_exclude_none,
            is_coroutine=True,
        )
        dump_json = _DUMP_JSON and response_field is not None
        if dump_json:
            serialize = functools.partial(serialize, dump_json=True)

        async def lean(request: Request) -> Response | None:
            """The answer on the plain path; None where FastAPI's handler must answer."""
            if overrides is not None and getattr(overrides, "dependency_overrides", None):
                return None
            values: dict[str, Any] = {}
            if body_field is not None:
                if not _is_json(request.headers.get("content-type")) or not await request.body():
                    return None
                try:
                    raw = await request.json()
                except Exception:  # malformed, not UTF-8, nested too deeply (RecursionError): FastAPI's 422 / 400
                    return None
                value, errors = body_field.validate(raw, {}, loc=("body",))
                if errors:
                    return None
                values[body_name] = value  # type: ignore[index]
            cache: dict[Callable[..., Any], Any] = {}
            for need in plan:
                value = await _solve(need, request, cache)
                if need.name is not None:
                    values[need.name] = value
            if request_name is not None:
                values[request_name] = request
            sub = None
            if response_name is not None:
                sub = Response()
                del sub.headers["content-length"]
                sub.status_code = None  # type: ignore[assignment]
                values[response_name] = sub
            result = await call(**values)
            if isinstance(result, Response):
                return result
            status = status_code or (sub.status_code if sub is not None else None) or 200
            content = await serialize(response_content=result)
            response = (
                Response(content, status_code=status, media_type="application/json")
                if dump_json
                else JSONResponse(content, status_code=status)
            )
            if not is_body_allowed_for_status_code(response.status_code):
                response.body = b""
            if sub is not None:
                response.headers.raw.extend(sub.headers.raw)
            return response

        async def handler(request: Request) -> Response:
            direct = request.scope.get(_DIRECT)
            if direct is not None and not request.scope.get("path_params"):
                direct[0].learn(request.scope, lean)
            response = await lean(request)
            return response if response is not None else await full(request)

        return handler


async def _solve(need: _Call, request: Request, cache: dict[Callable[..., Any], Any]) -> Any:
    if need.call in cache:
        return cache[need.call]
    kwargs: dict[str, Any] = {}
    for sub in need.needs:
        value = await _solve(sub, request, cache)
        if sub.name is not None:
            kwargs[sub.name] = value
    if need.request_param is not None:
        kwargs[need.request_param] = request
    cache[need.call] = value = await need.call(**kwargs)
    return value


# -- direct routes ----------------------------------------------------------------------------------

# scope key: (the DirectRoutes, the request's (method, path), the scope's keys then)
_DIRECT = "rendition.direct_routes"
LeanHandler = Callable[[Request], Coroutine[Any, Any, "Response | None"]]


class DirectRoutes:
    """ASGI middleware directly outside Starlette's ``ExceptionMiddleware`` (the app's innermost): a
    request for a method and path that a lean route answered before goes straight to that route's
    lean handler, past the exception middleware's own call, FastAPI's exit stacks and the router's
    search of every route (docs/benchmarks.md: the event loop's work per request).

    What the skipped layers do for such a request is done here as they do it: the route's scope
    entries (learnt from the first request, the per-request exit stacks left out: a lean route has
    none to fill), the app's exception handlers (Starlette's ``wrap_app_handling_exceptions`` with
    the handlers the first request carried), and a request the lean path hands back (a bad body,
    dependency overrides) goes through the whole stack with what was read of its body replayed.
    Inside any other middleware (not the innermost) it passes every request through.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.enabled = isinstance(app, ExceptionMiddleware)
        self._routes: dict[tuple[str, str], tuple[LeanHandler, dict[str, Any]]] = {}

    def learn(self, scope: Scope, lean: LeanHandler) -> None:
        """Called by a lean route's handler on the whole stack's path: the request's method and path
        are now its route's, and what routing added to the scope (but the request's own exit stacks)
        is the route's."""
        _, key, before = scope[_DIRECT]
        if key not in self._routes:
            routing = {k: v for k, v in scope.items() if k not in before and not isinstance(v, AsyncExitStack)}
            self._routes[key] = (lean, routing)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        key = (scope["method"], scope["path"])
        route = self._routes.get(key)
        if route is not None:
            read: list[Message] = []
            if await self._direct(route, scope, _recording(receive, read), send):
                return
            for name in route[1]:
                scope.pop(name, None)
            receive = _replaying(read, receive)
        scope[_DIRECT] = (self, key, frozenset(scope) | {_DIRECT})
        await self.app(scope, receive, send)

    @staticmethod
    async def _direct(route: tuple[LeanHandler, dict[str, Any]], scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer on the lean path; False (nothing sent) where the whole stack must answer."""
        lean, routing = route
        scope.update({k: dict(v) if isinstance(v, dict) else v for k, v in routing.items()})
        request = Request(scope, receive, send)
        answered = True

        async def app(scope: Scope, receive: Receive, send: Send) -> None:
            nonlocal answered
            response = await lean(request)
            if response is None:
                answered = False
            else:
                await response(scope, receive, send)

        await wrap_app_handling_exceptions(app, request)(scope, receive, send)
        return answered


def _recording(receive: Receive, read: list[Message]) -> Receive:
    async def recording() -> Message:
        message = await receive()
        read.append(message)
        return message

    return recording


def _replaying(read: list[Message], receive: Receive) -> Receive:
    async def replaying() -> Message:
        return read.pop(0) if read else await receive()

    return replaying
