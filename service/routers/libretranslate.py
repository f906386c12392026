"""LibreTranslate-compatible ``POST /translate`` and ``GET /languages``.

LibreTranslate accepts JSON and form-encoded bodies; ``libretranslatepy`` posts
``application/x-www-form-urlencoded`` (``q``, ``source``, ``target``, ``api_key``), so both are
parsed here.  Errors use LibreTranslate's ``{"error": "..."}`` shape.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from service.deps import (
    AppState,
    as_list,
    auth_error,
    bearer_token,
    engine_or_503,
    get_settings,
    get_state,
    key_is_valid,
)
from service.errors import APIError, invalid
from service.routers.translate import decode_options, translate_texts
from service.schemas import Language, LibreTranslateRequest
from service.settings import Settings

router = APIRouter(tags=["libretranslate"])

LANGUAGE_NAMES = {
    "ar": "Arabic",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "es": "Spanish",
    "fi": "Finnish",
    "fr": "French",
    "hu": "Hungarian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nl": "Dutch",
    "pl": "Polish",
    "pt": "Portuguese",
    "ro": "Romanian",
    "ru": "Russian",
    "sv": "Swedish",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "zh": "Chinese",
}

_BODY_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": LibreTranslateRequest.model_json_schema()},
            "application/x-www-form-urlencoded": {"schema": LibreTranslateRequest.model_json_schema()},
        },
    }
}


async def _parse_body(request: Request) -> LibreTranslateRequest:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = await request.body()
    if ctype == "application/json" or (not ctype and raw[:1] in (b"{", b"[")):
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, int too long, nesting too deep
            raise APIError(422, f"invalid JSON body: {type(e).__name__}: {str(e)[:200]}", kind="validation") from None
    elif ctype in ("application/x-www-form-urlencoded", ""):
        try:
            form = parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            raise APIError(422, "form body is not valid UTF-8", kind="validation") from None
        data = {k: (v if k == "q" and len(v) > 1 else v[-1]) for k, v in form.items()}
    else:
        raise APIError(
            415,
            f"unsupported content type {ctype!r}; send application/json or application/x-www-form-urlencoded",
            kind="unsupported_media_type",
        )
    if not isinstance(data, dict):
        raise APIError(422, "the body must be a JSON object", kind="validation")
    try:
        return LibreTranslateRequest.model_validate(data)
    except ValidationError as e:
        raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in e.errors()]) from None


@router.post("/translate", summary="Translate (LibreTranslate-compatible)", openapi_extra=_BODY_DOC)
async def translate(
    request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> dict:
    body = await _parse_body(request)
    if not key_is_valid(settings, body.api_key or bearer_token(request)):
        raise auth_error()
    if body.format != "text":
        raise invalid("format", f"format {body.format!r} is not supported; only 'text'", "unsupported_format")
    texts = as_list(body.q, "q", settings)
    engine, _ = engine_or_503(state, "translator")
    if body.source == "auto":
        raise APIError(
            400,
            f"language auto-detection is not supported; pass a source language, one of: {', '.join(engine.languages)}",
            kind="unsupported_language_pair",
        )
    n = body.alternatives + 1
    beam = max(settings.default_beam_size, n)
    if beam > settings.max_beam_size:
        raise invalid(
            "alternatives",
            f"{body.alternatives} alternatives need a beam of {beam}; the limit is {settings.max_beam_size} (RENDITION_MAX_BEAM_SIZE)",
            "too_many_alternatives",
        )
    opts = decode_options(settings, beam, n, 1.0, None)
    translations, _, _ = await translate_texts(request, state, settings, texts, body.source, body.target, opts, field="q")
    single = isinstance(body.q, str)
    out: dict = {"translatedText": translations[0].text if single else [t.text for t in translations]}
    if body.alternatives:
        alts = [[text for text, _ in t.hypotheses[1:]] for t in translations]
        out["alternatives"] = alts[0] if single else alts
    return out


@router.get("/languages", response_model=list[Language], summary="Supported languages (LibreTranslate-compatible)")
async def languages(state: AppState = Depends(get_state)) -> list[Language]:
    engine, _ = engine_or_503(state, "translator")
    langs = engine.languages
    return [Language(code=c, name=LANGUAGE_NAMES.get(c, c), targets=[t for t in langs if t != c]) for c in langs]
