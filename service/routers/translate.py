"""``POST /v1/translate``: the native translation API (n-best, scores, token usage)."""

from __future__ import annotations

from dataclasses import replace

from fastapi import APIRouter, Depends, Request

from model import segment
from model.segment import InputTooLong, Segmented
from model.translation.glossary import Glossary, Marked
from model.translation.search import SearchOptions, max_output_lengths
from model.translation.translator import Translation
from service import admission, glossaries, inference
from service.deps import AppState, as_list, engine_or_503, get_settings, get_state, require_api_key
from service.engines import DecodeOptions, TranslationEngine, TranslationJob, TranslationTooLong
from service.errors import APIError, invalid
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
    if length < settings.min_max_length:
        raise invalid(
            "max_length",
            f"{length} is below the minimum of {settings.min_max_length} (RENDITION_MIN_MAX_LENGTH): "
            "it leaves no room for a translation",
            "max_length_out_of_range",
        )
    if length > settings.max_length_limit:
        raise invalid(
            "max_length",
            f"{length} is over the limit of {settings.max_length_limit} (RENDITION_MAX_LENGTH_LIMIT)",
            "max_length_out_of_range",
        )
    return DecodeOptions(beam, num_hypotheses, float(length_penalty), length)


def search_options(settings: Settings, body: TranslateRequest, engine: TranslationEngine) -> DecodeOptions:
    """decode_options plus CTranslate2's decoding options, each checked against the others."""
    sampling = body.sampling_topk != 1
    beam = 1 if sampling and body.beam_size is None else body.beam_size
    if sampling and beam != 1:
        raise invalid("beam_size", f"sampling (sampling_topk {body.sampling_topk}) needs beam_size 1, not {beam}", "sampling_needs_greedy")
    opts = decode_options(settings, beam, 1 if sampling else body.num_hypotheses, body.length_penalty, body.max_length)
    if sampling and body.num_hypotheses > settings.max_beam_size:
        raise invalid(
            "num_hypotheses",
            f"{body.num_hypotheses} draws; the limit is {settings.max_beam_size} (RENDITION_MAX_BEAM_SIZE)",
            "num_hypotheses_out_of_range",
        )
    if body.min_length >= opts.max_length:
        raise invalid("min_length", f"{body.min_length} must be below max_length {opts.max_length}", "min_length_out_of_range")
    prefix: tuple[int, ...] = ()
    if body.target_prefix is not None:
        prefix = tuple(engine.translator.tokenizer.encode([body.target_prefix])[0])
        if not prefix or len(prefix) + 1 >= opts.max_length:
            raise invalid(
                "target_prefix",
                f"{len(prefix)} tokens; it must be 1 to {opts.max_length - 2} tokens (below max_length)",
                "target_prefix_out_of_range",
            )
    return replace(
        opts,
        num_hypotheses=body.num_hypotheses if sampling else opts.num_hypotheses,
        min_length=body.min_length,
        repetition_penalty=body.repetition_penalty,
        no_repeat_ngram_size=body.no_repeat_ngram_size,
        target_prefix=prefix,
        sampling_topk=body.sampling_topk,
        sampling_temperature=body.sampling_temperature,
    )


def _merge(doc: Segmented, parts: list[Translation]) -> Translation:
    """One text's sentence translations -> one Translation: the k-th hypothesis joins every
    sentence's k-th (or its last) with the text's own gaps; scores add up."""
    nbest = []
    for k in range(max(len(p.hypotheses) for p in parts)):
        picks = [p.hypotheses[min(k, len(p.hypotheses) - 1)] for p in parts]
        nbest.append((doc.join([text for text, _ in picks]), sum(score for _, score in picks)))
    return Translation(nbest[0][0], nbest[0][1], [tok for p in parts for tok in p.tokens], nbest)


def fallback_options(settings: Settings, opts: DecodeOptions) -> DecodeOptions | None:
    """The options of the second decoding of a sentence whose translation reached its length limit
    (a repetition loop): no n-gram of RENDITION_LENGTH_FALLBACK_NO_REPEAT_NGRAM tokens twice; None
    when that is off or the request's own constraint is already as strict."""
    n = settings.length_fallback_no_repeat_ngram
    if n <= 0 or 0 < opts.no_repeat_ngram_size <= n:
        return None
    return replace(opts, no_repeat_ngram_size=n)


def _too_long(
    e: TranslationTooLong, owner: list[tuple[int, int]], field: str, opts: DecodeOptions, settings: Settings, retried: bool
) -> APIError:
    i, j = owner[e.index]
    rel = SearchOptions()
    why = f"max_length {e.limit}" if e.limit == opts.max_length else (
        f"{e.limit} tokens: {rel.max_length_a:g} x its {e.source_tokens} source tokens with the language tag and </s>, "
        f"+ {rel.max_length_b}"
    )
    return APIError(
        422,
        f"{field}[{i}]: the translation of sentence {j + 1} reached its length limit ({why}) without "
        f"ending{', also when decoded again without repeated phrases' if retried else ''}; nothing is cut: "
        f"raise max_length (at most "
        f"{settings.max_length_limit}, RENDITION_MAX_LENGTH_LIMIT) or shorten the sentence",
        kind="translation_too_long",
        param=field,
    )


def _with_glossary(t: Translation, marked: Marked, glossary: Glossary, counts: list[int]) -> Translation:
    """``t`` with the glossary's target terms in place of their stand-ins (every hypothesis)."""
    best = glossary.restore(marked, t.text)
    counts[0] += best.placed
    counts[1] += best.missing
    nbest = [(glossary.restore(marked, text).text, score) for text, score in t.hypotheses]
    return Translation(best.text, t.score, t.tokens, nbest)


async def translate_texts(
    request: Request,
    state: AppState,
    settings: Settings,
    texts: list[str],
    source: str,
    target: str,
    opts: DecodeOptions,
    truncate: bool | None = None,
    field: str = "text",
    glossary: Glossary | None = None,
) -> tuple[list[Translation], int, list[bool]]:
    """Split every text into sentences, translate all of them as one job through the inference
    facade and put each text back together with its own spacing and line breaks.

    Nothing is cut silently: a sentence over the translator's input limit is a 413.  A sentence
    whose translation reaches its length limit without ending is decoded once more with a
    repetition constraint (``fallback_options``, counted in rendition_length_fallbacks_total); if
    that does not end either, it is a 422 unless ``truncate`` (default
    RENDITION_TRUNCATE_TRANSLATIONS) allows the cut one.  ``glossary``: its source terms become
    stand-ins the translator copies, and its target terms replace them after decoding (a sentence
    with no term is translated exactly as without it).  Returns (translations, source token
    count, per text whether a sentence of it was cut)."""
    inference.check_pair(state, source, target)
    docs = [segment.split(t, source) for t in texts]
    if opts.target_prefix and any(len(doc.sentences) > 1 for doc in docs):
        i = next(i for i, doc in enumerate(docs) if len(doc.sentences) > 1)
        raise invalid([field, i], "target_prefix needs texts of one sentence each (this one has several)", "target_prefix_text")
    owner = [(i, j) for i, doc in enumerate(docs) for j in range(len(doc.sentences))]  # sentence -> (text, index)
    allow_cut = settings.truncate_translations if truncate is None else truncate
    sentences = [s for doc in docs for s in doc.sentences]
    marked = [glossary.protect(s) for s in sentences] if glossary else None
    job = TranslationJob([m.text for m in marked] if marked else sentences, source, target, opts, truncate=allow_cut)

    def admit(engine: TranslationEngine, ids: list[list[int]]):
        """422 for a text with no usable tokens; a 4xx for a job that cannot finish alone within
        the request timeout (service.admission); else the ledger entry held while it runs."""
        per_text: list[list[int]] = [[] for _ in docs]
        for (i, _), x in zip(owner, ids):
            per_text[i] += x[1:-1]  # without the target tag and </s>
        admission.check_usable(
            engine.translator.tokenizer, per_text, [field if len(texts) == 1 else [field, n] for n in range(len(docs))], texts
        )
        return admit_units(engine, ids)

    def admit_units(engine: TranslationEngine, ids: list[list[int]]):
        limits = max_output_lengths([len(x) for x in ids], SearchOptions(max_length=opts.max_length))
        units = admission.translation_units([len(x) for x in ids], max(opts.beam_size, opts.num_hypotheses), limits)
        return state.ledger.admit(admission.check_alone(units, settings))

    first_error: TranslationTooLong | None = None
    try:
        result = await inference.translate(request, state, settings, job, admit)
    except InputTooLong as e:
        i, j = owner[e.index]
        raise APIError(
            413,
            f"{field}[{i}]: sentence {j + 1} is {e.length} tokens long; the translator reads at most {e.limit} "
            "tokens per sentence (nothing is cut: split it into shorter sentences)",
            kind="sentence_too_long",
            param=field,
        ) from None
    except TranslationTooLong as e:
        if e.output is None:
            raise _too_long(e, owner, field, opts, settings, False) from None
        first_error, result = e, e.output
    sentences_out, cut = list(result.translations), list(result.truncated)
    redo = [k for k, c in enumerate(cut) if c]
    again = fallback_options(settings, opts) if redo else None
    if again is not None:  # the second decoding of the sentences that reached their limit
        second = TranslationJob([job.texts[k] for k in redo], source, target, again, truncate=True)
        fixed = await inference.translate(request, state, settings, second, admit_units)
        for k, t, c in zip(redo, fixed.translations, fixed.truncated):
            state.metrics.length_fallbacks.labels("limit" if c else "ended").inc()
            if not c:
                sentences_out[k], cut[k] = t, False
    if first_error is not None and any(cut):
        k = cut.index(True)
        n = len(engine_or_503(state, "translator")[0].pre(TranslationJob([job.texts[k]], source, target, opts))[0])
        limit = max_output_lengths([n], SearchOptions(max_length=opts.max_length))[0]
        raise _too_long(TranslationTooLong(k, limit, n), owner, field, opts, settings, again is not None)
    if marked is not None and glossary is not None:
        counts = [0, 0]
        sentences_out = [_with_glossary(t, m, glossary, counts) for t, m in zip(sentences_out, marked)]
        if counts[0]:
            state.metrics.glossary_terms.labels("placed").inc(counts[0])
        if counts[1]:
            state.metrics.glossary_terms.labels("missing").inc(counts[1])
    out, truncated, start = [], [], 0
    for doc in docs:
        end = start + len(doc.sentences)
        out.append(_merge(doc, sentences_out[start:end]))
        truncated.append(any(cut[start:end]))
        start = end
    for i, t in enumerate(out):
        if len(t.hypotheses) < opts.num_hypotheses:
            raise invalid(
                [field, i] if len(texts) > 1 else field,
                f"only {len(t.hypotheses)} of the {opts.num_hypotheses} hypotheses asked for ended within "
                f"max_length {opts.max_length}; raise max_length or ask for fewer",
                "too_few_hypotheses",
            )
    return out, result.source_tokens, truncated


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
    opts = search_options(settings, body, engine_or_503(state, "translator")[0])
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
    return TranslateResponse(results=results, model=state.translator.name, usage=usage)
