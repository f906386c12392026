"""One error type for the whole service, rendered in the shape each API family expects.

/v1/embeddings            OpenAI:          {"error": {"message", "type", "param", "code"}}
/translate, /languages    LibreTranslate:  {"error": "message"}
/embed, /rerank, /info... TEI:             {"error": "message", "error_type": "Validation"}
everything else           FastAPI:         {"detail": "message"} or {"detail": [{loc, msg, type}]}
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

log = logging.getLogger("rendition.errors")

OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
    504: "timeout_error",
}


# Documented on every operation (FastAPI(responses=...)), so the OpenAPI schema lists every status
# the service can answer with and the three error-body shapes (checked by schemathesis).
_ERROR_BODY = {
    "anyOf": [
        {"type": "object", "required": ["detail"], "properties": {"detail": {}}},  # FastAPI
        {"type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}},  # LibreTranslate
        {  # OpenAI
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "object", "required": ["message", "type"]}},
        },
    ]
}
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"description": text, "content": {"application/json": {"schema": _ERROR_BODY}}}
    for code, text in (
        (400, "unsupported language pair or unparsable body"),
        (401, "missing or invalid API key"),
        (403, "invalid API key (LibreTranslate routes)"),
        (404, "model not enabled"),
        (413, "request body too large"),
        (415, "unsupported content type"),
        (422, "invalid request"),
        (429, "queue full (Retry-After)"),
        (500, "the batch this request ran in failed"),
        (503, "models loading or shutting down"),
        (504, "no result within the request timeout"),
    )
}


class APIError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        kind: str = "invalid_request",
        param: str | None = None,
        headers: dict[str, str] | None = None,
        detail: Any = None,
        code: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind  # metric label: rendition_errors_total{type=...}
        self.param = param
        self.headers = headers or {}
        self.detail = detail  # FastAPI-style detail (e.g. a list of {loc, msg, type}); default: message
        self.code = code  # OpenAI's error code (e.g. model_not_found)


def invalid(field: str | list, message: str, kind: str = "validation") -> APIError:
    """A 422 naming the field (``loc``) and the limit, in FastAPI's validation-error shape."""
    loc = ["body", *field] if isinstance(field, list) else ["body", field]
    return APIError(
        422,
        f"{'.'.join(map(str, loc[1:]))}: {message}",
        kind=kind,
        param=str(loc[1]),
        detail=[{"loc": loc, "msg": message, "type": kind}],
    )


LIBRETRANSLATE_PATHS = ("/translate", "/languages", "/detect", "/frontend/settings")
# file translation: LibreTranslate's error shape and its 403 for a bad key; other statuses as they
# are (413 for a file over a limit)
LIBRETRANSLATE_FILE_PATHS = ("/translate_file", "/download_file/")
LIBRETRANSLATE_FILE_STATUS = {401: 403}
# LibreTranslate answers bad input with 400 and a bad key with 403 (its clients test for them)
LIBRETRANSLATE_STATUS = {401: 403, 413: 400, 415: 400, 422: 400}


TEI_PATHS = ("/", "/embed", "/similarity", "/rerank", "/tokenize", "/decode", "/info", "/health")
# text-embeddings-inference's error_type per status (its router maps them the other way round)
TEI_TYPES = {400: "Empty", 413: "Validation", 422: "Validation", 429: "Overloaded", 503: "Unhealthy"}


def family(path: str) -> str:
    if path.startswith(("/v1/embeddings", "/v1/models")):
        return "openai"
    if path in LIBRETRANSLATE_PATHS or path.startswith(LIBRETRANSLATE_FILE_PATHS):
        return "libretranslate"
    if path in TEI_PATHS:
        return "tei"
    return "fastapi"


def error_response(
    path: str,
    status: int,
    message: str,
    *,
    param: str | None = None,
    detail: Any = None,
    headers: dict[str, str] | None = None,
    code: str | None = None,
) -> JSONResponse:
    fam = family(path)
    if fam == "openai":
        body: Any = {
            "error": {
                "message": message,
                "type": "invalid_request_error" if code else OPENAI_TYPES.get(status, "invalid_request_error"),
                "param": param,
                "code": code,
            }
        }
    elif fam == "tei":
        body = {"error": message, "error_type": TEI_TYPES.get(status, "Backend" if status >= 500 else "Validation")}
    elif fam == "libretranslate":
        body = {"error": message}
        remap = LIBRETRANSLATE_STATUS if path in LIBRETRANSLATE_PATHS else LIBRETRANSLATE_FILE_STATUS
        status = remap.get(status, status)
    else:
        body = {"detail": detail if detail is not None else message}
    return JSONResponse(body, status_code=status, headers=headers)


def _count(request: Request, kind: str) -> None:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.errors.labels(kind).inc()


FASTAPI_PARSE_ERROR = "There was an error parsing the body"  # FastAPI's 400 for a body json.loads raised on
MAX_ERRORS = 20  # validation errors listed in one 422


def _validation_message(errors: list[dict]) -> tuple[str, str | None]:
    parts, param = [], None
    for e in errors:
        loc = [str(x) for x in e.get("loc", ()) if x != "body"]
        param = param or (loc[0] if loc else None)
        parts.append(f"{'.'.join(loc) or 'body'}: {e.get('msg')}")
    return "; ".join(parts), param


def install(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        _count(request, exc.kind)
        return error_response(
            request.url.path,
            exc.status,
            exc.message,
            param=exc.param,
            detail=exc.detail,
            headers=exc.headers,
            code=exc.code,
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        _count(request, "validation")
        all_errors = exc.errors()
        # at most MAX_ERRORS listed: a body with 50k unknown keys must not get a 50k-item (MB-sized) answer
        errors = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in all_errors[:MAX_ERRORS]]
        message, param = _validation_message(errors)
        if len(all_errors) > MAX_ERRORS:
            message += f"; and {len(all_errors) - MAX_ERRORS} more errors"
        return error_response(request.url.path, 422, message, param=param, detail=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == FASTAPI_PARSE_ERROR:  # e.g. invalid UTF-8, JSON nested too deeply, a number too long
            _count(request, "validation")
            msg = "malformed JSON body: it could not be parsed (invalid UTF-8, nested too deeply, or a number too long)"
            return error_response(request.url.path, 422, msg, detail=[{"loc": ["body"], "msg": msg, "type": "json_invalid"}])
        _count(request, f"http_{exc.status_code}")
        return error_response(request.url.path, exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        _count(request, "internal")
        return error_response(request.url.path, 500, f"internal error: {type(exc).__name__}")
