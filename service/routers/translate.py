"""``POST /v1/translate``: the native translation API (n-best, scores, token usage)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from service import inference
from service.deps import AppState, as_list, get_settings, get_state, require_api_key
from service.engines import DecodeOptions, TranslationJob
from service.errors import invalid
from service.schemas import Hypothesis, TranslateRequest, TranslateResponse, TranslateUsage, TranslationResult
from service.settings import Settings

router = APIRouter(tags=["translation"], dependencies=[Depends(require_api_key)])


def decode_options(
    settings: Settings, beam_size: int | None, num_hypotheses: int, length_penalty: float, max_length: int | None
) -> DecodeOptions:
    beam = settings.default_beam_size if beam_size is None else beam_size
    if not 1 <= beam <= settings.max_beam_size:
        raise invalid(
            "beam_size",
            f"{beam} is out of range; it must be between 1 and {settings.max_beam_size} (RENDITION_MAX_BEAM_SIZE)",
            "beam_size_out_of_range",
        )
    if num_hypotheses > beam:
        raise invalid(
            "num_hypotheses", f"{num_hypotheses} is larger than beam_size {beam}", "num_hypotheses_out_of_range"
        )
    length = settings.default_max_length if max_length is None else max_length
    if length > settings.max_length_limit:
        raise invalid(
            "max_length",
            f"{length} is over the limit of {settings.max_length_limit} (RENDITION_MAX_LENGTH_LIMIT)",
            "max_length_out_of_range",
        )
    return DecodeOptions(beam, num_hypotheses, float(length_penalty), length)


async def translate_texts(
    request: Request,
    state: AppState,
    settings: Settings,
    texts: list[str],
    source: str,
    target: str,
    opts: DecodeOptions,
):
    """Through the inference facade; returns (translations, source token count)."""
    out = await inference.translate(request, state, settings, TranslationJob(texts, source, target, opts))
    return out.translations, out.source_tokens


@router.post(
    "/v1/translate",
    response_model=TranslateResponse,
    response_model_exclude_none=True,
    summary="Translate one text or a list",
)
async def translate(
    body: TranslateRequest,
    request: Request,
    state: AppState = Depends(get_state),
    settings: Settings = Depends(get_settings),
) -> TranslateResponse:
    texts = as_list(body.text, "text", settings)
    opts = decode_options(settings, body.beam_size, body.num_hypotheses, body.length_penalty, body.max_length)
    translations, source_tokens = await translate_texts(request, state, settings, texts, body.source, body.target, opts)
    results = []
    for t in translations:
        r = TranslationResult(text=t.text)
        if body.return_scores:
            r.score = t.score
            r.hypotheses = [Hypothesis(text=x, score=s) for x, s in t.hypotheses]
        results.append(r)
    usage = TranslateUsage(source_tokens=source_tokens, target_tokens=sum(len(t.tokens) for t in translations))
    return TranslateResponse(results=results, model=state.translator.name, usage=usage)
