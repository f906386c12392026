"""``POST /v1/translate``: the native translation API (n-best, scores, token usage)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.translator import Translation
from rendition.service import glossaries, inference
from rendition.service.deps import AppState, as_list, get_settings, get_state, require_api_key, translator_queue
from rendition.service.engines import TranslationEngine
from rendition.service.errors import invalid
from rendition.service.routing import LeanRoute
from rendition.service.schemas import Hypothesis, TranslateRequest, TranslateResponse, TranslateUsage, TranslationResult
from rendition.service.settings import Settings
from rendition.service.translation import detected_language, make_options, translate_pieces, translate_texts

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
    if body.source == "auto":
        return await _translate_detected(body, request, state, settings, texts)
    engines = _engines(state, body.source, body.target)
    opts = request_options(settings, body, engines[-1])  # (a target prefix is in the last translator's tokens)
    glossary = glossaries.resolve(settings, body.source, body.target, body.glossary, body.glossary_name)
    translations, source_tokens, cut = await translate_texts(
        request, state, settings, texts, body.source, body.target, opts, body.truncate, glossary=glossary
    )
    usage = TranslateUsage(source_tokens=source_tokens, target_tokens=sum(len(t.tokens) for t in translations))
    return TranslateResponse(results=_results(body, translations, cut), model="+".join(e.name for e in engines), usage=usage)


def _engines(state: AppState, source: str, target: str) -> list[TranslationEngine]:
    """The translators of ``source`` -> ``target``: one, or two through English (400 when none)."""
    return [translator_queue(state, leg.translator)[0] for leg in inference.route(state, source, target)]


def _results(body: TranslateRequest, translations: list[Translation], cut: list[bool]) -> list[TranslationResult]:
    results = []
    for t, was_cut in zip(translations, cut):
        r = TranslationResult(text=t.text, truncated=True if was_cut else None)
        if body.return_scores:
            r.score = t.score
            r.hypotheses = [Hypothesis(text=x, score=s) for x, s in t.hypotheses]
        results.append(r)
    return results


async def _translate_detected(
    body: TranslateRequest, request: Request, state: AppState, settings: Settings, texts: list[str]
) -> TranslateResponse:
    """``source: "auto"``: each text from its detected language (``translate_pieces``); a text
    already in the target language comes back as it is."""
    engines: dict[str, list[TranslationEngine]] = {}  # per detected language (looked up once)

    def options_for(source: str) -> TranslationOptions:
        engines[source] = _engines(state, source, body.target)
        return request_options(settings, body, engines[source][-1])

    got = await translate_pieces(
        request, state, settings, texts, [[t] for t in texts], "auto", body.target, options_for,
        lambda source: glossaries.resolve(settings, source, body.target, body.glossary, body.glossary_name),
        truncate=body.truncate,
    )  # fmt: skip
    assert got.found is not None  # (detected)
    translations = [t[0] for t in got.translations]
    results = _results(body, translations, got.cut)
    for r, found in zip(results, got.found):
        r.detected_language = detected_language(*found[0])
    models = ["+".join(e.name for e in used) for used in engines.values()]  # (in the order the languages came)
    usage = TranslateUsage(source_tokens=got.source_tokens, target_tokens=sum(len(t.tokens) for t in translations))
    return TranslateResponse(results=results, model=", ".join(models) or "none", usage=usage)
