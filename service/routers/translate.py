"""``POST /v1/translate``: the native translation API (n-best, scores, token usage)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from rendition.model.translation.options import TranslationOptions
from rendition.service import glossaries, inference
from rendition.service.deps import AppState, as_list, get_settings, get_state, require_api_key, translator_queue
from rendition.service.engines import TranslationEngine
from rendition.service.errors import invalid
from rendition.service.routing import LeanRoute
from rendition.service.schemas import Hypothesis, TranslateRequest, TranslateResponse, TranslateUsage, TranslationResult
from rendition.service.settings import Settings
from rendition.service.translation import make_options, translate_texts

router = APIRouter(tags=["translation"], dependencies=[Depends(require_api_key)], route_class=LeanRoute)


def request_options(settings: Settings, body: TranslateRequest, engine: TranslationEngine) -> TranslationOptions:
    """The native API's request -> ``TranslationOptions`` (``rendition.service.translation.make_options``:
    defaults, limits, a 422 naming the field); ``target_prefix`` is text, encoded here."""
    prefix = None
    if body.target_prefix is not None:
        prefix = tuple(engine.translator.tokenizer.encode([body.target_prefix])[0])
        if not prefix:
            raise invalid("target_prefix", "the text has no tokens; send some text or leave target_prefix out", "target_prefix_out_of_range")
    return make_options(
        settings,
        beam_size=body.beam_size,
        num_hypotheses=body.num_hypotheses,
        length_penalty=float(body.length_penalty),
        max_length=body.max_length,
        min_length=body.min_length,
        repetition_penalty=float(body.repetition_penalty),
        no_repeat_ngram_size=body.no_repeat_ngram_size,
        target_prefix=prefix,
        sampling_topk=body.sampling_topk,
        sampling_temperature=float(body.sampling_temperature),
    )


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
    engines = [translator_queue(state, leg.translator)[0] for leg in inference.route(state, body.source, body.target)]
    opts = request_options(settings, body, engines[-1])  # (a target prefix is in the last translator's tokens)
    glossary = glossaries.resolve(settings, body.source, body.target, body.glossary, body.glossary_name)
    translations, source_tokens, cut = await translate_texts(
        request, state, settings, texts, body.source, body.target, opts, body.truncate, glossary=glossary
    )
    results = []
    for t, was_cut in zip(translations, cut):
        r = TranslationResult(text=t.text, truncated=True if was_cut else None)
        if body.return_scores:
            r.score = t.score
            r.hypotheses = [Hypothesis(text=x, score=s) for x, s in t.hypotheses]
        results.append(r)
    usage = TranslateUsage(source_tokens=source_tokens, target_tokens=sum(len(t.tokens) for t in translations))
    return TranslateResponse(results=results, model="+".join(e.name for e in engines), usage=usage)
