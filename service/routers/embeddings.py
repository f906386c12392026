"""OpenAI-compatible ``POST /v1/embeddings`` and ``POST /v1/similarity`` over the DiSAN encoder.

``encoding_format=base64`` returns the little-endian float32 bytes, base64-encoded (what the
official SDK asks for by default and decodes with numpy).  ``dimensions`` truncates the vector,
then L2-normalises it.  Errors on /v1/embeddings use OpenAI's ``{"error": {...}}`` shape.
"""

from __future__ import annotations

import base64
from typing import cast

from fastapi import APIRouter, Depends, Request, Response

from rendition.service import admission
from rendition.service.deps import AppState, as_list, engine_or_503, get_settings, get_state, require_api_key
from rendition.service.embedding import embed
from rendition.service.engines import EmbeddingEngine
from rendition.service.errors import APIError, invalid
from rendition.service.routing import LeanRoute
from rendition.service.schemas import (
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbeddingsUsage,
    SimilarityRequest,
    SimilarityResponse,
)
from rendition.service.settings import Settings

router = APIRouter(tags=["embeddings"], dependencies=[Depends(require_api_key)], route_class=LeanRoute)


def check_model(engine: EmbeddingEngine, model: str | None, aliases: dict[str, str]) -> None:
    """``model`` may be left out, name the loaded encoder or one of its aliases
    (``RENDITION_EMBEDDING_MODEL_ALIASES``); anything else is OpenAI's 404."""
    if model is not None and model != engine.name and aliases.get(model) != engine.name:
        also = f" (or its aliases: {', '.join(sorted(aliases))})" if aliases else ""
        raise APIError(
            404,
            f"The model '{model}' does not exist; this server embeds with '{engine.name}'{also}",
            kind="model_not_found",
            param="model",
            code="model_not_found",
        )


@router.post("/v1/embeddings", response_model=EmbeddingsResponse, summary="Sentence embeddings (OpenAI-compatible)")
async def embeddings(
    body: EmbeddingsRequest,
    request: Request,
    response: Response,
    state: AppState = Depends(get_state),
    settings: Settings = Depends(get_settings),
) -> EmbeddingsResponse:
    if not isinstance(body.input, str) and any(not isinstance(x, str) for x in body.input):
        raise APIError(
            400,
            "input holds token ids; this server embeds text only (its tokenizer is not tiktoken's). "
            "Send the texts themselves; in LangChain's OpenAIEmbeddings set check_embedding_ctx_length=False",
            kind="token_input",
            param="input",
        )
    engine, _ = engine_or_503(state, "encoder")
    check_model(engine, body.model, settings.embedding_model_aliases)
    texts = as_list(cast("str | list[str]", body.input), "input", settings, (settings.max_embedding_items, "RENDITION_MAX_EMBEDDING_ITEMS"))
    if body.dimensions is not None and body.dimensions > engine.dim:
        raise invalid(
            "dimensions",
            f"{body.dimensions} is larger than the model's embedding size {engine.dim}",
            "dimensions_out_of_range",
        )
    vecs, tokens = await embed(
        request, state, settings, texts, body.dimensions, truncate=body.truncate, response=response
    )
    if body.encoding_format == "base64":
        data = [
            Embedding(embedding=base64.b64encode(v.astype("<f4").tobytes()).decode("ascii"), index=i)
            for i, v in enumerate(vecs)
        ]
    else:
        data = [Embedding(embedding=v.tolist(), index=i) for i, v in enumerate(vecs)]
    return EmbeddingsResponse(
        data=data, model=engine.name, usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens)
    )


@router.post("/v1/similarity", response_model=SimilarityResponse, summary="Cosine similarity of one sentence to a list")
async def similarity(
    body: SimilarityRequest,
    request: Request,
    state: AppState = Depends(get_state),
    settings: Settings = Depends(get_settings),
) -> SimilarityResponse:
    as_list(body.source_sentence, "source_sentence", settings)
    sentences = as_list(body.sentences, "sentences", settings)
    if len(sentences) + 1 > settings.max_items:
        raise invalid(
            "sentences",
            f"{len(sentences)} items; the limit is {settings.max_items - 1} (RENDITION_MAX_ITEMS minus the source)",
            "too_many_items",
        )
    vecs, tokens = await embed(request, state, settings, [body.source_sentence, *sentences])
    sims = admission.cosine(vecs[1:], vecs[0])
    engine, _ = engine_or_503(state, "encoder")
    return SimilarityResponse(
        similarities=[float(s) for s in sims],
        model=engine.name,
        usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens),
    )
