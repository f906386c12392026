"""OpenAI-compatible ``POST /v1/embeddings`` and ``POST /v1/similarity`` over the DiSAN encoder.

``encoding_format=base64`` returns the little-endian float32 bytes, base64-encoded (what the
official SDK asks for by default and decodes with numpy).  ``dimensions`` truncates the vector,
then L2-normalises it.  Errors on /v1/embeddings use OpenAI's ``{"error": {...}}`` shape.
"""

from __future__ import annotations

import base64

import numpy as np
from fastapi import APIRouter, Depends, Request

from service import inference
from service.deps import AppState, as_list, engine_or_503, get_settings, get_state, require_api_key
from service.engines import EmbeddingJob
from service.errors import invalid
from service.schemas import (
    Embedding,
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbeddingsUsage,
    SimilarityRequest,
    SimilarityResponse,
)
from service.settings import Settings

router = APIRouter(tags=["embeddings"], dependencies=[Depends(require_api_key)])


async def embed(
    request: Request, state: AppState, settings: Settings, texts: list[str], dimensions: int | None = None
) -> tuple[np.ndarray, int]:
    """Through the inference facade; returns ((N, dim) normalised vectors, token count)."""
    out = await inference.embed(request, state, settings, EmbeddingJob(texts, dimensions))
    return out.vectors, out.tokens


@router.post("/v1/embeddings", response_model=EmbeddingsResponse, summary="Sentence embeddings (OpenAI-compatible)")
async def embeddings(
    body: EmbeddingsRequest,
    request: Request,
    state: AppState = Depends(get_state),
    settings: Settings = Depends(get_settings),
) -> EmbeddingsResponse:
    texts = as_list(body.input, "input", settings)
    engine, _ = engine_or_503(state, "encoder")
    if body.dimensions is not None and body.dimensions > engine.dim:
        raise invalid(
            "dimensions",
            f"{body.dimensions} is larger than the model's embedding size {engine.dim}",
            "dimensions_out_of_range",
        )
    vecs, tokens = await embed(request, state, settings, texts, body.dimensions)
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
    sims = vecs[1:] @ vecs[0]  # (N,) cosine: rows are unit vectors
    engine, _ = engine_or_503(state, "encoder")
    return SimilarityResponse(
        similarities=[float(s) for s in sims],
        model=engine.name,
        usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens),
    )
