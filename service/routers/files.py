"""LibreTranslate-compatible document translation: ``POST /translate_file`` and
``GET /download_file/{file_id}``.

The request is LibreTranslate's multipart form (``file``, ``source`` — may be ``auto`` —,
``target``, ``api_key``); the answer is ``{"translatedFileUrl": ...}``, where the translated file
waits for ``RENDITION_FILE_KEEP_S`` seconds (only the newest ``RENDITION_FILE_KEEP_MAX`` are kept) in
``RENDITION_FILE_DIR`` (several replicas behind one address need it on a volume they share).
The formats and their limits are ``rendition.model.documents``; a file that is not what its extension says,
or that is over a limit (a zip bomb, an XML entity bomb), is answered 400 or 413 naming the limit,
in LibreTranslate's ``{"error": ...}`` shape.  The segments of a document go to the translator
through ``translate_batch``, the one function here that calls the translation path the other
routes use.
"""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path, PurePath

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile

from rendition.model import documents
from rendition.model.documents import DocumentError, DocumentTooLarge, Limits
from rendition.model.text.glossary import Glossary
from rendition.model.text.language_id import Runs
from rendition.service import glossaries, inference
from rendition.service.deps import (
    AppState,
    auth_error,
    bearer_token,
    get_settings,
    get_state,
    key_is_valid,
    loaded_languages,
)
from rendition.service.errors import APIError
from rendition.service.routing import LeanRoute
from rendition.service.schemas import PAIRS_NOTE
from rendition.service.settings import Settings
from rendition.service.translation import detector, foreign_language, make_options, translate_texts

router = APIRouter(tags=["libretranslate"], route_class=LeanRoute)

SUPPORTED = sorted(documents.FORMATS)
CHUNK_TEXTS = 64  # texts per call to the translation path (each call is admitted on its own)
CHUNK_CHARS = 8000


def limits(settings: Settings) -> Limits:
    return Limits(
        max_unpacked_bytes=settings.max_file_unpacked_bytes,
        max_members=settings.max_file_members,
        max_segments=settings.max_file_segments,
        max_chars=settings.max_file_chars,
    )


def body_limit(settings: Settings) -> tuple[int, str]:
    """The request-body limit of ``POST /translate_file`` (the file and the form around it)."""
    return settings.max_file_bytes + 65_536, "RENDITION_MAX_FILE_BYTES"


# -- the translated files, waiting for download ---------------------------------------------------


_FILE_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


class FileStore:
    """Translated files on disk, ``<dir>/<id>/<filename>``, for ``keep_s`` seconds, only the newest
    ``keep_max`` of them.  Nothing is held in memory: replicas that share the directory (a volume)
    serve each other's downloads."""

    def __init__(self, directory: Path | None, keep_s: float, keep_max: int):
        self.own = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="rendition-files-")) if directory is None else directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.keep_s, self.keep_max = keep_s, keep_max

    def _expire(self) -> None:
        entries = []
        for d in self.dir.iterdir():
            if _FILE_ID.fullmatch(d.name):
                try:
                    entries.append((d.stat().st_mtime, d))
                except OSError:  # removed meanwhile (by another replica)
                    pass
        entries.sort(reverse=True)
        now = time.time()
        for i, (mtime, d) in enumerate(entries):
            if i >= self.keep_max or now - mtime > self.keep_s:
                shutil.rmtree(d, ignore_errors=True)

    def put(self, data: bytes, filename: str) -> str:
        file_id = secrets.token_urlsafe(18)
        d = self.dir / file_id
        d.mkdir()
        (d / filename).write_bytes(data)
        self._expire()
        return file_id

    def get(self, file_id: str) -> Path | None:
        if not _FILE_ID.fullmatch(file_id):
            return None
        self._expire()
        try:
            return next((self.dir / file_id).iterdir(), None)
        except OSError:
            return None

    def close(self) -> None:
        if self.own:
            shutil.rmtree(self.dir, ignore_errors=True)


def file_store(request: Request) -> FileStore:
    store = getattr(request.app.state, "file_store", None)
    if store is None:
        s: Settings = request.app.state.settings
        store = request.app.state.file_store = FileStore(s.file_dir, s.file_keep_s, s.file_keep_max)
    return store


# -- translation ------------------------------------------------------------------------------------


async def translate_batch(
    request: Request,
    state: AppState,
    settings: Settings,
    texts: list[str],
    source: str,
    target: str,
    glossary: Glossary | None = None,
) -> list[str | None]:
    """Every text's translation through the routes' translation path (``translate_texts``), or
    ``None`` for a text it refuses (no usable tokens, a sentence over the input limit, a
    translation that does not end): the document keeps that text as it was.  The texts go in
    chunks, each admitted on its own (a document may take longer than one request's timeout); a
    refused chunk is halved until the text it refuses is found.  Overload (429, 503, 504) ends
    the whole request."""
    opts = make_options(settings)  # (the form has no decoding fields: the defaults)

    async def run(chunk: list[str]) -> list[str | None]:
        try:
            done, _, _ = await translate_texts(
                request, state, settings, chunk, source, target, opts, field="file", glossary=glossary
            )
        except APIError as e:
            if e.status not in (413, 422):
                raise
            if len(chunk) == 1:
                return [None]
            half = len(chunk) // 2
            return [*await run(chunk[:half]), *await run(chunk[half:])]
        return [t.text for t in done]

    out: list[str | None] = []
    chunk: list[str] = []
    for text in texts:
        if chunk and (len(chunk) >= CHUNK_TEXTS or sum(map(len, chunk)) + len(text) > CHUNK_CHARS):
            out += await run(chunk)
            chunk = []
        chunk.append(text)
    if chunk:
        out += await run(chunk)
    return out


def _field(form: FormData, name: str, required: bool = True) -> str:
    value = form.get(name)
    if isinstance(value, UploadFile):
        raise APIError(400, f"field {name!r} must be text, not a file", kind="validation", param=name)
    if value is None or not str(value).strip():
        if required:
            raise APIError(400, f"missing field {name!r}", kind="validation", param=name)
        return ""
    return str(value).strip()


_SAFE_NAME = re.compile(r"[^\w.\- ()\[\]]+")


def _safe_filename(name: str) -> str:
    base = PurePath(name.replace("\\", "/")).name
    return _SAFE_NAME.sub("_", base)[-200:] or "file"


_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "source", "target"],
                    "properties": {
                        "file": {"type": "string", "format": "binary", "description": f"one of {', '.join(SUPPORTED)}"},
                        "source": {"type": "string", "description": f"the file's language, or auto; {PAIRS_NOTE}", "example": "en"},
                        "target": {"type": "string", "example": "fr"},
                        "api_key": {"type": "string"},
                        "glossary": {"type": "string", "description": "JSON object: source term -> target term"},
                        "glossary_name": {"type": "string", "description": "a server glossary (RENDITION_GLOSSARY_DIR)"},
                    },
                }
            }
        },
    }
}


@router.post("/translate_file", summary="Translate a file (LibreTranslate-compatible)", openapi_extra=_FORM)
async def translate_file(
    request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> dict:
    """Multipart form: ``file``, ``source`` (a language or ``auto``), ``target``, ``api_key``,
    ``glossary`` (a JSON object of source term -> target term), ``glossary_name`` (a server glossary).
    Formats: the extensions of ``GET /frontend/settings``' ``supportedFilesFormat``."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "multipart/form-data":
        if not key_is_valid(settings, bearer_token(request)):
            raise auth_error()
        raise APIError(415, f"send the file as multipart/form-data (not {ctype or 'no content type'!r})", kind="unsupported_media_type")
    try:
        form = await request.form(max_files=1, max_fields=20)
    except Exception as e:  # multipart's parse errors (bad boundary, more than one file, too many fields)
        raise APIError(400, f"invalid multipart body: {str(e)[:200]}", kind="validation") from None
    try:
        body_key = form.get("api_key")
        if not key_is_valid(settings, (body_key if isinstance(body_key, str) else None) or bearer_token(request)):
            raise auth_error()  # (an empty api_key is no key, as in LibreTranslate)
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise APIError(400, "missing field 'file' (a file part of the multipart form)", kind="validation", param="file")
        source, target = _field(form, "source"), _field(form, "target")
        glossary_terms, glossary_name = _field(form, "glossary", False), _field(form, "glossary_name", False)
        filename = _safe_filename(upload.filename or "")
        try:
            documents.extension(filename)
        except DocumentError as e:
            raise APIError(400, str(e), kind="unsupported_file_type", param="file") from None
        data = await upload.read(settings.max_file_bytes + 1)
    finally:
        await form.close()
    if len(data) > settings.max_file_bytes:
        raise APIError(
            413, f"the file is larger than the limit of {settings.max_file_bytes:,} bytes (RENDITION_MAX_FILE_BYTES)",
            kind="file_too_large", param="file",
        )  # fmt: skip
    languages = loaded_languages(state)
    if source != "auto":
        inference.check_pair(state, source, target)
    elif target not in languages:
        inference.check_pair(state, next(c for c in languages if c != target), target)  # the 400 naming the pairs
    try:
        doc = await run_in_threadpool(documents.open_document, data, filename, limits(settings), target)
    except DocumentError as e:
        status = 413 if isinstance(e, DocumentTooLarge) else 400
        raise APIError(status, str(e), kind="invalid_file", param="file") from None
    except RecursionError:
        raise APIError(400, "the file is nested too deeply to be read", kind="invalid_file", param="file") from None
    prepared = documents.prepare(doc.segments, doc.placeholders_whole)
    if source == "auto":  # the document's language, and each text's runs in another (a document that mixes them)
        sample = " ".join(doc.segments)[:5000]
        det = detector(languages)
        if foreign := det.foreign(sample):
            raise foreign_language("file", foreign, det.languages)
        source = det.detect(sample)[0][0] if sample.strip() else target
        runs = Runs.gather(det.runs(text, source) for text in prepared.texts)
    else:
        runs = Runs.single(prepared.texts, source)
    if set(runs.by_language) <= {target}:  # already in the target language: its own translation
        translations: list[str | None] = [None] * len(doc.segments)
    else:
        done: dict[str, Sequence[str | None]] = {}
        for lang, texts in runs.by_language.items():
            if lang == target:
                done[lang] = texts
            else:
                glossary = glossaries.resolve(settings, lang, target, glossary_terms, glossary_name)
                done[lang] = await translate_batch(request, state, settings, texts, lang, target, glossary)
        translations = documents.finish(prepared, doc.segments, documents.join_runs(runs, done))
    try:
        out = await run_in_threadpool(doc.render, translations)
    except (DocumentError, RecursionError) as e:
        raise APIError(400, str(e), kind="invalid_file", param="file") from None
    file_id = await run_in_threadpool(file_store(request).put, out, filename)
    return {"translatedFileUrl": str(request.url_for("download_file", file_id=file_id))}


@router.get("/download_file/{file_id}", summary="Download a translated file (LibreTranslate-compatible)")
async def download_file(file_id: str, request: Request) -> FileResponse:
    path = await run_in_threadpool(file_store(request).get, file_id)
    if path is None:
        raise APIError(
            404, "no such file: it was never made, or it expired (translated files are kept for "
            f"{request.app.state.settings.file_keep_s:g} s, RENDITION_FILE_KEEP_S)", kind="not_found",
        )  # fmt: skip
    return FileResponse(path, media_type=documents.media_type(path.name), filename=path.name)
