"""``rendition.service.routing.LeanRoute`` against FastAPI's own ``APIRoute``: the same app built with
each answers every request byte for byte alike (valid bodies, every kind of bad body, a dependency
that refuses, the ``Response`` parameter, dependency overrides), and the lean one does not run
FastAPI's dependency solver on the plain path.  ``DirectRoutes`` then answers a learnt route's
requests past the router, again byte for byte as FastAPI does."""

from __future__ import annotations

from typing import Literal

import fastapi.routing
import pytest
import starlette.routing
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from fastapi.testclient import TestClient
from pydantic import BaseModel, Field
from starlette.middleware.exceptions import ExceptionMiddleware

from rendition.service.routing import DirectRoutes, LeanRoute


class Item(BaseModel):
    name: str = Field(min_length=1)
    n: int = 1
    note: str | None = None
    kind: Literal["a", "b"] = "a"


class Other(BaseModel):
    other: list[int]


class Out(BaseModel):
    name: str
    total: float
    note: str | None = None
    tags: list[str] = []


async def get_prefix(request: Request) -> str:
    return request.app.state.prefix


async def require_key(request: Request, prefix: str = Depends(get_prefix)) -> None:
    if request.headers.get("x-key") != prefix + "-key":
        raise HTTPException(401, "no key")


def build(route_class: type[fastapi.routing.APIRoute]) -> FastAPI:
    router = APIRouter(dependencies=[Depends(require_key)], route_class=route_class)

    @router.post("/items", response_model=Out, response_model_exclude_none=True)
    async def items(body: Item, request: Request, response: Response, prefix: str = Depends(get_prefix)) -> Out:
        if body.n == 2:
            response.headers["X-Two"] = "yes"
            response.status_code = 201
        if body.n == 3:
            raise HTTPException(409, "three")
        return Out(name=prefix + body.name, total=body.n / 3, note=body.note, tags=[request.method, "é"])

    @router.post("/plain")
    async def plain(body: Item | Other) -> dict:
        return {"got": body.model_dump(), "ratio": 0.1 + 0.2}

    @router.post("/bodyless")
    async def bodyless(request: Request, prefix: str = Depends(get_prefix)) -> dict:
        return {"prefix": prefix, "length": len(await request.body())}

    app = FastAPI()
    app.state.prefix = "p"
    app.state.router = router
    app.include_router(router)
    return app


def requests() -> list[tuple[str, dict]]:
    key = {"x-key": "p-key"}
    json_ct = {**key, "content-type": "application/json"}
    return [
        ("/items", {"json": {"name": "x"}, "headers": key}),
        ("/items", {"json": {"name": "x", "n": 2, "note": "n"}, "headers": key}),
        ("/items", {"json": {"name": "x", "n": 3}, "headers": key}),
        ("/items", {"json": {"name": "x", "kind": "b", "extra": 1}, "headers": key}),
        ("/items", {"json": {"name": ""}, "headers": key}),
        ("/items", {"json": {"n": "many"}, "headers": key}),
        ("/items", {"json": [1, 2], "headers": key}),
        ("/items", {"json": {"name": "x"}}),  # no key: the router's dependency refuses
        ("/items", {"json": {"name": "x"}, "headers": {"x-key": "wrong"}}),
        ("/items", {"content": b'{"name": "x"', "headers": json_ct}),  # malformed JSON
        ("/items", {"content": b'{"name": "\xff"}', "headers": json_ct}),  # not UTF-8
        ("/items", {"content": b"", "headers": json_ct}),
        ("/items", {"content": b'{"name": "x"}', "headers": key}),  # no content type
        ("/items", {"content": b'{"name": "x"}', "headers": {**key, "content-type": "text/plain"}}),
        ("/items", {"content": b'{"name": "x"}', "headers": {**key, "content-type": "application/merge-patch+json"}}),
        (
            "/items",
            {"content": b'{"name": "x"}', "headers": {**key, "content-type": "application/json; charset=utf-8"}},
        ),
        ("/items", {"content": b'{"name": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "headers": json_ct}),  # too deep
        ("/items", {"content": b'{"name": "x", "n": 2.0}', "headers": json_ct}),
        ("/items", {"content": b'{"name": "x", "n": "2"}', "headers": json_ct}),
        ("/plain", {"json": {"other": [1, 2]}, "headers": key}),
        ("/plain", {"json": {"name": "y"}, "headers": key}),
        ("/plain", {"json": {"neither": 1}, "headers": key}),
        ("/bodyless", {"content": b"abc", "headers": key}),
        ("/bodyless", {"headers": {"x-key": "p-key"}}),
    ]


def answer(client: TestClient, path: str, kwargs: dict) -> tuple[int, bytes, list[tuple[str, str]]]:
    r = client.post(path, **kwargs)
    return r.status_code, r.content, sorted((k, v) for k, v in r.headers.items() if k != "date")


@pytest.fixture(scope="module")
def clients():
    with TestClient(build(fastapi.routing.APIRoute)) as full, TestClient(build(LeanRoute)) as lean:
        yield full, lean


def test_the_routes_of_this_shape_take_the_lean_path():
    routes = build(LeanRoute).state.router.routes
    assert {r.path: r.lean for r in routes} == {"/items": True, "/plain": True, "/bodyless": True}


@pytest.mark.parametrize("case", range(len(requests())))
def test_every_answer_is_fastapis_own(clients, case):
    full, lean = clients
    path, kwargs = requests()[case]
    assert answer(lean, path, kwargs) == answer(full, path, kwargs)


def test_the_plain_path_skips_the_dependency_solver_and_bad_bodies_go_to_fastapi(clients, monkeypatch):
    _, lean = clients
    calls = []
    solve = fastapi.routing.solve_dependencies

    async def counting(*args, **kwargs):
        calls.append(1)
        return await solve(*args, **kwargs)

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", counting)
    key = {"x-key": "p-key"}
    assert lean.post("/items", json={"name": "x", "n": 2}, headers=key).status_code == 201
    assert lean.post("/bodyless", headers=key).status_code == 200
    assert calls == []
    assert lean.post("/items", json={"name": ""}, headers=key).status_code == 422  # FastAPI's handler writes the error
    assert calls == [1]


def test_dependency_overrides_are_honoured():
    app = build(LeanRoute)

    async def other_prefix() -> str:
        return "q"

    app.dependency_overrides[get_prefix] = other_prefix
    with TestClient(app) as client:
        r = client.post("/items", json={"name": "x"}, headers={"x-key": "q-key"})
        assert r.status_code == 200 and r.json()["name"] == "qx"


def test_the_services_hot_routes_are_lean():
    from rendition.service.routers import embeddings, libretranslate, system, tei, translate

    routes = {
        (r.path, m): r.lean
        for router in (translate.router, embeddings.router, tei.router, libretranslate.router, system.router)
        for r in router.routes
        if isinstance(r, LeanRoute)
        for m in r.methods
    }
    for hot in (("/v1/translate", "POST"), ("/v1/embeddings", "POST"), ("/embed", "POST"), ("/translate", "POST"),
                ("/health/ready", "GET"), ("/health/live", "GET")):  # fmt: skip
        assert routes[hot], hot


# -- DirectRoutes: a learnt method and path goes straight to the lean handler -----------------------


def build_direct() -> FastAPI:
    app = build(LeanRoute)
    app.add_middleware(DirectRoutes)
    return app


def direct_of(app: FastAPI) -> DirectRoutes:
    layer = app.middleware_stack
    while not isinstance(layer, DirectRoutes):
        layer = layer.app
    return layer


@pytest.fixture(scope="module")
def direct_client():
    with TestClient(build_direct()) as client:
        yield client


@pytest.mark.parametrize("case", range(len(requests())))
def test_a_direct_answer_is_fastapis_own(clients, direct_client, case):
    full, _ = clients
    path, kwargs = requests()[case]
    expected = answer(full, path, kwargs)
    assert answer(direct_client, path, kwargs) == expected  # (the first: through the router, which it learns)
    assert answer(direct_client, path, kwargs) == expected  # (then: straight to the route, or handed back)


def test_a_learnt_route_skips_the_router_and_a_bad_body_goes_through_it(monkeypatch):
    calls = []
    router_call = starlette.routing.Router.__call__

    async def counting(self, scope, receive, send):
        if scope["type"] == "http":
            calls.append(scope["path"])
        await router_call(self, scope, receive, send)

    monkeypatch.setattr(starlette.routing.Router, "__call__", counting)
    key = {"x-key": "p-key"}
    with TestClient(build_direct()) as client:
        assert client.post("/items", json={"name": "x", "n": 2}, headers=key).status_code == 201
        assert calls == ["/items"]
        assert direct_of(client.app).enabled
        for _ in range(3):
            r = client.post("/items", json={"name": "y"}, headers=key)
            assert r.status_code == 200 and r.json()["name"] == "py"
        assert client.post("/items", json={"name": "x", "n": 3}, headers=key).status_code == 409  # the app's handler
        assert client.post("/items", json={"name": "x"}).status_code == 401
        assert calls == ["/items"]
        bad = client.post("/items", json={"name": ""}, headers=key)  # handed back: FastAPI's 422, the body replayed
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "name"]
        assert calls == ["/items", "/items"]
        assert client.post("/plain", json={"other": [1]}, headers=key).status_code == 200  # another path: learnt anew
        assert calls == ["/items", "/items", "/plain"]


def test_what_a_request_brings_to_its_scope_is_its_own():
    """An outer layer's per-request scope entry (the service's disconnect hook) is not learnt as the route's."""

    router = APIRouter(route_class=LeanRoute)

    @router.post("/who")
    async def who(request: Request) -> dict:
        return {"mine": request.scope["mine"], "route": request.scope["route"].path}

    app = FastAPI()
    app.include_router(router)
    app.add_middleware(DirectRoutes)
    inner = app.build_middleware_stack

    def outer():
        stack = inner()
        seen = iter(range(100))

        async def tagging(scope, receive, send):
            if scope["type"] == "http":
                scope["mine"] = next(seen)
            await stack(scope, receive, send)

        tagging.app = stack  # type: ignore[attr-defined]
        return tagging

    app.build_middleware_stack = outer
    with TestClient(app) as client:
        assert [client.post("/who").json() for _ in range(3)] == [{"mine": i, "route": "/who"} for i in range(3)]
        assert direct_of(app)._routes.keys() == {("POST", "/who")}


def test_inside_another_middleware_it_passes_every_request_through():
    app = build(LeanRoute)
    app.add_middleware(CORSMiddleware, allow_origins=["https://a.example"])
    app.add_middleware(DirectRoutes)  # (outside CORS: not the innermost)
    with TestClient(app) as client:
        key = {"x-key": "p-key"}
        assert [client.post("/items", json={"name": "x"}, headers=key).status_code for _ in range(2)] == [200, 200]
        assert not direct_of(app).enabled and direct_of(app)._routes == {}


def test_the_service_reaches_its_routes_directly_inside_its_middleware():
    from rendition.service.app import create_app
    from rendition.service.settings import Settings

    for cors in ([], ["https://a.example"]):
        app = create_app(Settings(cors_origins=cors), translator=None, encoder=None)
        layer = app.build_middleware_stack()
        while not isinstance(layer, DirectRoutes):
            layer = layer.app
        assert layer.enabled and isinstance(layer.app, ExceptionMiddleware), cors
