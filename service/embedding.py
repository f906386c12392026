"""The embedding helper the embedding routes share (routers never import each other): texts or
token ids -> the encoder's limit (413, or cut with ``truncate``) -> the inference facade ->
vectors.  Used by the OpenAI-compatible routes (``rendition.service.routers.embeddings``) and TEI's
(``rendition.service.routers.tei``)."""

from __future__ import annotations

import numpy as np
from fastapi import Request, Response

from rendition.service import admission, inference
from rendition.service.deps import AppState, engine_or_503
from rendition.service.engines import EmbeddingJob
from rendition.service.errors import APIError
from rendition.service.settings import Settings

TRUNCATED_HEADER = "X-Rendition-Truncated"  # indices of the inputs cut at the encoder's limit (truncate=true)


async def embed(
    request: Request,
    state: AppState,
    settings: Settings,
    texts: list[str] | None,
    dimensions: int | None = None,
    *,
    normalize: bool = True,
    truncate: bool = False,
    left: bool = False,
    field: str = "input",
    response: Response | None = None,
    ids: list[list[int]] | None = None,
) -> tuple[np.ndarray, int]:
    """Tokenize here, then through the inference facade; returns ((N, dim) vectors, token count).

    An input over the encoder's max_length is a 413 naming the limit; with ``truncate`` it is cut
    (its end, or with ``left`` its start) and its index listed in the X-Rendition-Truncated header
    of ``response``.  ``ids``: token ids given instead of texts (TEI's /embed takes them)."""
    engine, _ = engine_or_503(state, "encoder")
    limit = engine.encoder.max_length
    if ids is None:
        assert texts is not None  # (texts, or ids instead)
        full = engine.encoder.tokenizer.encode(texts)
        admission.check_usable(
            engine.encoder.tokenizer, full, [field if len(texts) == 1 else [field, i] for i in range(len(texts))], texts
        )
    else:
        full = ids
    over = [i for i, x in enumerate(full) if len(x) > limit]
    if over and not truncate:
        raise APIError(
            413,
            f"{field}[{over[0]}] is {len(full[over[0]])} tokens long; the encoder reads at most {limit} tokens "
            "(send truncate=true to cut it)",
            kind="input_too_long",
            param=field,
        )
    ids = [x[-limit:] if left else x[:limit] for x in full]
    if over and response is not None:
        response.headers[TRUNCATED_HEADER] = ",".join(map(str, over))
    out = await inference.embed(request, state, settings, EmbeddingJob(ids=ids, dimensions=dimensions, normalize=normalize))
    return out.vectors, out.tokens
