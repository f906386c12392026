"""LibreTranslate-compatible ``POST /translate``, ``POST /detect``, ``GET /languages`` and
``GET /frontend/settings``.

LibreTranslate accepts JSON, form-encoded and multipart bodies: ``libretranslatepy`` posts
``application/x-www-form-urlencoded``, LibreTranslate's own web UI posts ``multipart/form-data``
(a browser ``FormData``), other integrations JSON; all three are parsed here.  ``source: "auto"``
detects the language of every text (``rendition.model.text.language_id``) and answers with
``detectedLanguage``; ``format: "html"`` translates the text of the document paragraph by paragraph
and keeps its markup, inline markup on the words that translate it (code and preformatted text kept
as they are, as in an uploaded .html file).  Errors use LibreTranslate's ``{"error": "..."}`` shape and its status codes (400 bad
input, 403 bad key, 429 overload; ``rendition.service.errors``).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar, cast
from urllib.parse import parse_qs

from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.datastructures import UploadFile

from rendition.model.documents import FORMATS
from rendition.model.documents.textfiles import Html
from rendition.model.translation.options import TranslationOptions
from rendition.service import glossaries
from rendition.service.deps import (
    AppState,
    as_list,
    auth_error,
    bearer_token,
    get_settings,
    get_state,
    key_is_valid,
    loaded_languages,
    loaded_pairs,
)
from rendition.service.errors import APIError
from rendition.service.routing import LeanRoute
from rendition.service.schemas import DetectRequest, Language, LibreTranslateRequest
from rendition.service.settings import Settings
from rendition.service.translation import detected_language, detector, make_options, translate_pieces

router = APIRouter(tags=["libretranslate"], route_class=LeanRoute)

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

def _body_doc(model: type[BaseModel]) -> dict:
    schema = model.model_json_schema()
    kinds = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")
    return {"requestBody": {"required": True, "content": {k: {"schema": schema} for k in kinds}}}


def _form_fields(pairs: list[tuple[str, Any]]) -> dict:
    """A form's fields; ``q`` sent several times is a list (a batch), any other field keeps its last value."""
    fields: dict[str, list] = {}
    for k, v in pairs:
        if isinstance(v, UploadFile):
            raise APIError(400, f"field {k!r} is a file; file translation is not supported", kind="validation")
        fields.setdefault(k, []).append(v)
    return {k: (v if k == "q" and len(v) > 1 else v[-1]) for k, v in fields.items()}


Body = TypeVar("Body", bound=LibreTranslateRequest | DetectRequest)


async def _parse_body(request: Request, model: type[Body]) -> Body:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    raw = await request.body()
    if ctype == "application/json" or (not ctype and raw[:1] in (b"{", b"[")):
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError, int too long, nesting too deep
            raise APIError(422, f"invalid JSON body: {type(e).__name__}: {str(e)[:200]}", kind="validation") from None
    elif ctype in ("application/x-www-form-urlencoded", ""):
        try:
            query = parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
        except UnicodeDecodeError:
            raise APIError(422, "form body is not valid UTF-8", kind="validation") from None
        data = _form_fields([(k, v) for k, vs in query.items() for v in vs])
    elif ctype == "multipart/form-data":
        try:
            async with request.form(max_files=0, max_fields=1000) as form:
                data = _form_fields(list(form.multi_items()))
        except APIError:
            raise
        except Exception as e:  # multipart's parse errors (bad boundary, too many fields, a file)
            raise APIError(422, f"invalid multipart body: {str(e)[:200]}", kind="validation") from None
    else:
        raise APIError(
            415,
            f"unsupported content type {ctype!r}; send application/json, application/x-www-form-urlencoded "
            "or multipart/form-data",
            kind="unsupported_media_type",
        )
    if not isinstance(data, dict):
        raise APIError(422, "the body must be a JSON object", kind="validation")
    try:
        body = model.model_validate(data)
    except ValidationError as e:
        raise RequestValidationError([{**err, "loc": ("body", *err["loc"])} for err in e.errors()]) from None
    if not key_is_valid(request.app.state.settings, body.api_key or bearer_token(request)):  # "" is no key
        raise auth_error()
    return cast(Body, body)  # (model_validate of a type[Body] is a Body)


# -- HTML: translate the text nodes, keep the markup ---------------------------------------------


class HtmlDoc:
    """An HTML fragment or document, translated as an uploaded .html file is
    (``documents.textfiles.Html``: paragraph by paragraph, inline markup kept on its words)."""

    def __init__(self, html: str):
        self.html = html
        self.texts = Html(html).segments

    def render(self, pieces: list[str]) -> str:
        return Html(self.html).render_text(pieces)  # (parsed again: each alternative renders afresh)


def options(settings: Settings, alternatives: int = 0) -> TranslationOptions:
    """LibreTranslate's request -> ``TranslationOptions``: ``alternatives`` more hypotheses than
    the one answered, from a beam at least that wide (else the default beam); the rest defaults."""
    n = alternatives + 1
    names = {"beam_size": "alternatives", "num_hypotheses": "alternatives"}
    return make_options(settings, names, beam_size=max(settings.default_beam_size, n), num_hypotheses=n)


def _unique_alternatives(main: str, candidates: list[str], n: int) -> list[str]:
    out: list[str] = []
    for c in candidates:
        if c != main and c not in out:
            out.append(c)
    return out[:n]


@router.post("/translate", summary="Translate (LibreTranslate-compatible)", openapi_extra=_body_doc(LibreTranslateRequest))
async def translate(
    request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> dict:
    body: LibreTranslateRequest = await _parse_body(request, LibreTranslateRequest)
    texts = as_list(body.q, "q", settings)
    opts = options(settings, body.alternatives)
    n = opts.num_hypotheses
    html = [HtmlDoc(t) for t in texts] if body.format == "html" else None
    pieces = [d.texts for d in html] if html else [[t] for t in texts]  # what gets translated, per text
    got = await translate_pieces(
        request, state, settings, texts, pieces, body.source, body.target, lambda _: opts,
        lambda source: glossaries.resolve(settings, source, body.target, body.glossary, body.glossary_name), field="q",
    )  # fmt: skip
    results, cut, found = got.translations, got.cut, got.found

    def render(i: int, k: int) -> str:
        """Text i with every piece's k-th hypothesis (or its last)."""
        chosen = [t.hypotheses[min(k, len(t.hypotheses) - 1)][0] for t in results[i]]
        if html:
            return html[i].render(chosen)
        return chosen[0] if chosen else texts[i]

    single = isinstance(body.q, str)
    translated = [render(i, 0) for i in range(len(texts))]
    out: dict = {"translatedText": translated[0] if single else translated}
    if body.alternatives:
        alts = [
            _unique_alternatives(translated[i], [render(i, k) for k in range(1, n)], body.alternatives)
            for i in range(len(texts))
        ]
        out["alternatives"] = alts[0] if single else alts
    if found is not None:
        langs = [detected_language(*f[0]).model_dump() for f in found]
        out["detectedLanguage"] = langs[0] if single else langs
    if any(cut):
        out["truncated"] = cut[0] if single else cut
    return out


@router.post("/detect", summary="Detect the language (LibreTranslate-compatible)", openapi_extra=_body_doc(DetectRequest))
async def detect(
    request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> list:
    """Every served language with its confidence (percent), most likely first; a list per text when
    ``q`` is a list."""
    body: DetectRequest = await _parse_body(request, DetectRequest)
    texts = as_list(body.q, "q", settings)
    det = detector(loaded_languages(state))
    out = [[detected_language(lang, p) for lang, p in det.detect(t)] for t in texts]
    return out[0] if isinstance(body.q, str) else out


@router.get("/languages", response_model=list[Language], summary="Supported languages (LibreTranslate-compatible)")
async def languages(state: AppState = Depends(get_state)) -> list[Language]:
    """Every language of the loaded translators, each with the languages it translates into:
    directly, or through English (two translators in a row)."""
    pairs = loaded_pairs(state)
    return [Language(code=c, name=LANGUAGE_NAMES.get(c, c), targets=pairs.targets(c)) for c in pairs.languages]


@router.get("/frontend/settings", summary="Settings for LibreTranslate's web UI")
async def frontend_settings(
    state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> dict:
    langs = loaded_languages(state)
    target = next((c for c in langs if c != "en"), langs[0])
    return {
        "charLimit": settings.max_text_chars,
        "frontendTimeout": 500,
        "apiKeys": bool(settings.api_keys),
        "keyRequired": bool(settings.api_keys),
        "suggestions": False,
        "filesTranslation": True,  # POST /translate_file (rendition.service.routers.files)
        "supportedFilesFormat": sorted(FORMATS),
        "language": {
            "source": {"code": "auto", "name": "Auto Detect"},
            "target": {"code": target, "name": LANGUAGE_NAMES.get(target, target)},
        },
    }
