"""The web page: ``GET /ui`` (and ``GET /`` for a browser), plain HTML, CSS and JavaScript shipped
in the package (``rendition.service``'s ``static/``), no build step and nothing loaded from elsewhere.

``GET /`` answers by content negotiation: a client whose ``Accept`` header prefers ``text/html``
(a browser) gets the page; any other client gets what it got before the page existed, TEI's 405
(the route ``/`` is TEI's ``POST /``).  The page calls the API with relative URLs (``translate``,
``v1/embeddings``...), so it works at ``/`` and ``/ui`` alike, and behind a proxy that mounts the
service under a prefix.  It needs no key to load; the API calls it makes need one when the server
has keys (the page asks for it when ``/frontend/settings`` says ``keyRequired``).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from fastapi import APIRouter, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from rendition.service.routing import LeanRoute

router = APIRouter(tags=["ui"], route_class=LeanRoute)

# name -> media type: the only files served (no path from the request reaches the file system)
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
# The page's own policy: its scripts, styles and requests stay on this origin.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


PACKAGE = "rendition.service"  # the installed package's name: the page is its package data


@lru_cache(maxsize=len(ASSETS))
def asset(name: str) -> bytes:
    return (resources.files(PACKAGE) / "static" / name).read_bytes()


def _file(name: str) -> Response:
    headers = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
    if name == "index.html":
        headers |= {"Content-Security-Policy": CSP, "Referrer-Policy": "no-referrer", "Vary": "Accept"}
    return Response(asset(name), media_type=ASSETS[name], headers=headers)


def _quality(accept: str, media_type: str) -> float:
    """The q-value ``accept`` gives ``media_type`` itself (wildcards not counted: a client sending
    ``*/*`` has not asked for a page)."""
    best = 0.0
    for part in accept.split(","):
        kind, *params = (p.strip() for p in part.split(";"))
        if kind.lower() != media_type:
            continue
        q = 1.0
        for p in params:
            key, _, value = p.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best = max(best, q)
    return best


def wants_html(accept: str) -> bool:
    """``text/html`` is asked for explicitly and ranks at least as high as JSON."""
    html = _quality(accept, "text/html")
    return html > 0 and html >= _quality(accept, "application/json")


@router.get("/ui", include_in_schema=False)
async def ui() -> Response:
    return _file("index.html")


@router.get("/ui/{name}", include_in_schema=False)
async def ui_asset(name: str) -> Response:
    if name not in ASSETS:
        raise StarletteHTTPException(404, "Not Found")
    return _file(name)


@router.get("/", include_in_schema=False)
async def root(request: Request) -> Response:
    """The page for a browser; for any other client, the 405 that ``GET /`` has always answered."""
    if wants_html(request.headers.get("accept", "")):
        return _file("index.html")
    raise StarletteHTTPException(405, "Method Not Allowed", headers={"Allow": "POST", "Vary": "Accept"})
