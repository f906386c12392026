"""Hugging Face text-embeddings-inference (TEI) compatible routes over the DiSAN encoder.

``POST /embed`` (and ``POST /``, where TEI serves an embedding model's default task and
``huggingface_hub.InferenceClient(base_url=...)`` posts), ``/similarity``, ``/rerank``,
``/tokenize``, ``/decode``, ``GET /info`` and ``GET /health``, with TEI's request and response
shapes and its error body ``{"error": "...", "error_type": "..."}`` (``rendition.service.errors``).

Differences from TEI: ``/rerank`` scores with the same bi-encoder (cosine similarity of the
query's and each text's embeddings, mapped to [0, 1] as (1 + cos) / 2 unless ``raw_scores``),
not a cross-encoder; there are no prompts (a ``prompt_name`` is a 422); ``POST /`` with
``{"inputs": {"source_sentence", "sentences"}}`` answers as ``/similarity`` (what
``InferenceClient.sentence_similarity`` sends to its base URL).
"""

from __future__ import annotations

from typing import Literal, cast

import numpy as np
from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from rendition.service import admission
from rendition.service.deps import AppState, as_list, engine_or_503, get_settings, get_state, require_api_key
from rendition.service.embedding import embed
from rendition.service.errors import invalid
from rendition.service.routing import LeanRoute
from rendition.service.settings import Settings

router = APIRouter(tags=["tei"], dependencies=[Depends(require_api_key)], route_class=LeanRoute)


TokenIds = list[StrictInt] | list[list[StrictInt]]  # strict: true/false are not token ids


class _Options(BaseModel):
    model_config = ConfigDict(extra="ignore")

    truncate: bool | None = Field(None, description="cut inputs over max_input_length instead of 413")
    truncation_direction: Literal["Right", "Left", "right", "left"] = "Right"
    prompt_name: str | None = None


class EmbedRequest(_Options):
    inputs: str | list[str] | TokenIds = Field(description="text(s) or token ids from /tokenize")
    normalize: bool = True
    dimensions: int | None = Field(None, ge=1)


class SimilarityInputs(BaseModel):
    source_sentence: str
    sentences: list[str]


class SimilarityRequest(_Options):
    inputs: SimilarityInputs


class RootRequest(_Options):
    inputs: str | list[str] | TokenIds | SimilarityInputs
    normalize: bool = True
    dimensions: int | None = Field(None, ge=1)


class RerankRequest(_Options):
    query: str
    texts: list[str]
    raw_scores: bool = False
    return_text: bool = False


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    inputs: str | list[str]
    add_special_tokens: bool = True
    prompt_name: str | None = None


class DecodeRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ids: TokenIds
    skip_special_tokens: bool = True


def _check_options(opts: _Options) -> None:
    if opts.prompt_name is not None:
        raise invalid("prompt_name", f"prompt {opts.prompt_name!r} not found: this model has no prompts", "validation")


def _token_ids(state: AppState, inputs: list[int] | list[list[int]]) -> list[list[int]]:
    """Token ids as ``/tokenize`` gives them (this server's tokenizer), checked against the vocabulary."""
    engine, _ = engine_or_503(state, "encoder")
    seqs = cast("list[list[int]]", [inputs] if inputs and isinstance(inputs[0], int) else inputs)
    vocab = engine.encoder.tokenizer.vocab_size
    if not seqs or any(not s for s in seqs):
        raise invalid("inputs", "must not be empty", "empty_input")
    for i, s in enumerate(seqs):
        bad = [t for t in s if not 0 <= t < vocab]
        if bad:
            raise invalid(["inputs", i], f"token id {bad[0]} is not in the vocabulary (0..{vocab - 1})", "validation")
    return seqs


async def _embed(request: Request, state: AppState, settings: Settings, body: EmbedRequest | RootRequest) -> list:
    _check_options(body)
    engine, _ = engine_or_503(state, "encoder")
    if body.dimensions is not None and body.dimensions > engine.dim:
        raise invalid("dimensions", f"{body.dimensions} is larger than the model's {engine.dim}", "validation")
    limit = (settings.max_embedding_items, "RENDITION_MAX_EMBEDDING_ITEMS")
    inputs = cast("str | list[str] | list[int] | list[list[int]]", body.inputs)  # (not SimilarityInputs: tei_root)
    if isinstance(inputs, str) or (inputs and isinstance(inputs[0], str)):
        texts, ids = as_list(inputs, "inputs", settings, limit), None
    else:
        texts, ids = None, _token_ids(state, cast("list[int] | list[list[int]]", inputs))
        as_list(["x"] * len(ids), "inputs", settings, limit)
    vecs, _ = await embed(
        request,
        state,
        settings,
        texts,
        body.dimensions,
        normalize=body.normalize,
        truncate=bool(body.truncate),
        left=body.truncation_direction.lower() == "left",
        field="inputs",
        ids=ids,
    )
    return vecs.tolist()


async def _similarity(
    request: Request, state: AppState, settings: Settings, body: _Options, inputs: SimilarityInputs
) -> list[float]:
    _check_options(body)
    as_list(inputs.source_sentence, "inputs.source_sentence", settings)
    sentences = as_list(inputs.sentences, "inputs.sentences", settings)
    vecs, _ = await embed(
        request, state, settings, [inputs.source_sentence, *sentences], truncate=bool(body.truncate), field="inputs"
    )
    return [float(s) for s in admission.cosine(vecs[1:], vecs[0])]


@router.post("/embed", summary="Embeddings (TEI-compatible)")
async def tei_embed(
    body: EmbedRequest, request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> list[list[float]]:
    return await _embed(request, state, settings, body)


@router.post("/", summary="TEI's default route: embed (or similarity for {source_sentence, sentences})")
async def tei_root(
    body: RootRequest, request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> list:
    if isinstance(body.inputs, SimilarityInputs):
        return await _similarity(request, state, settings, body, body.inputs)
    return await _embed(request, state, settings, body)


@router.post("/similarity", summary="Cosine similarity of one sentence to a list (TEI-compatible)")
async def tei_similarity(
    body: SimilarityRequest,
    request: Request,
    state: AppState = Depends(get_state),
    settings: Settings = Depends(get_settings),
) -> list[float]:
    return await _similarity(request, state, settings, body, body.inputs)


@router.post("/rerank", summary="Rank texts by similarity to a query (TEI-compatible, bi-encoder scores)")
async def tei_rerank(
    body: RerankRequest, request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> list[dict]:
    _check_options(body)
    as_list(body.query, "query", settings)
    texts = as_list(body.texts, "texts", settings, (settings.max_embedding_items, "RENDITION_MAX_EMBEDDING_ITEMS"))
    vecs, _ = await embed(
        request,
        state,
        settings,
        [body.query, *texts],
        truncate=bool(body.truncate),
        left=body.truncation_direction.lower() == "left",
        field="texts",
    )
    cos = admission.cosine(vecs[1:], vecs[0])
    scores = cos if body.raw_scores else (1.0 + cos) / 2.0
    out = []
    for i in np.argsort(-scores, kind="stable"):
        item = {"index": int(i), "score": float(scores[i])}
        if body.return_text:
            item["text"] = texts[i]
        out.append(item)
    return out


@router.post("/tokenize", summary="Tokens with their character offsets (TEI-compatible)")
async def tei_tokenize(
    body: TokenizeRequest, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> list[list[dict]]:
    if body.prompt_name is not None:
        raise invalid("prompt_name", f"prompt {body.prompt_name!r} not found: this model has no prompts", "validation")
    texts = as_list(body.inputs, "inputs", settings, (settings.max_embedding_items, "RENDITION_MAX_EMBEDDING_ITEMS"))
    engine, _ = engine_or_503(state, "encoder")
    tok = engine.encoder.tokenizer
    return [
        [{"id": i, "text": text[a:b], "special": False, "start": a, "stop": b} for i, a, b in tok.encode_spans(text)] for text in texts
    ]


@router.post("/decode", summary="Token ids back to text (TEI-compatible)")
async def tei_decode(body: DecodeRequest, state: AppState = Depends(get_state)) -> list[str]:
    return engine_or_503(state, "encoder")[0].encoder.tokenizer.decode(_token_ids(state, body.ids))


@router.get("/info", summary="Model and server limits (TEI-compatible)")
async def tei_info(
    request: Request, state: AppState = Depends(get_state), settings: Settings = Depends(get_settings)
) -> dict:
    engine, _ = engine_or_503(state, "encoder")
    return {
        "model_id": engine.name,
        "model_sha": None,
        "model_dtype": state.dtype,
        "model_type": {"embedding": {"pooling": "disan"}},
        "max_concurrent_requests": settings.max_queue,
        "max_input_length": engine.encoder.max_length,
        "max_batch_tokens": settings.max_batch_tokens,
        "max_batch_requests": settings.max_batch_size,
        "max_client_batch_size": settings.max_embedding_items,
        "auto_truncate": False,
        "tokenization_workers": 1,
        "version": request.app.version,
        "sha": None,
        "docker_label": None,
        "prompts": None,
    }


health_router = APIRouter(tags=["tei"], route_class=LeanRoute)


@health_router.get(
    "/health",
    summary="200 with an empty body when the encoder is ready (TEI-compatible)",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string", "maxLength": 0}}}}},
)
async def tei_health(state: AppState = Depends(get_state)) -> Response:
    engine_or_503(state, "encoder")
    return Response(b"", status_code=200, media_type="text/plain")
