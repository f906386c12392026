"""The translation helpers every translating route shares (routers never import each other):
request values -> ``TranslationOptions`` under this deployment's limits (``make_options``), texts
-> sentences -> the inference facade -> texts (``translate_texts``), and the language detector
behind ``source: "auto"``.

Each API family maps its request schema onto ``make_options`` in one place: the native API in
``rendition.service.routers.translate`` (``request_options``), LibreTranslate's ``/translate`` in
``rendition.service.routers.libretranslate`` (``options``: ``alternatives`` -> the n-best); its
``/translate_file`` form has no decoding fields (the defaults).  (The OpenAI-compatible routes
only embed.)  ``TranslationOptions`` checks the values themselves (``rendition.model.translation.options``);
this module adds the deployment's limits and turns either refusal into a 422 (LibreTranslate's
routes answer 400) that names the request's field.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from fastapi import Request

from rendition.model.text import pipeline, segment
from rendition.model.text.glossary import Glossary
from rendition.model.text.language_id import LanguageDetector, Runs, language_name
from rendition.model.translation.options import InvalidOption, TranslationOptions
from rendition.model.translation.pairs import Leg
from rendition.model.translation.search import max_output_lengths
from rendition.model.translation.translator import Translation
from rendition.service import admission, inference
from rendition.service.deps import AppState, loaded_languages, translator_queue
from rendition.service.engines import TranslationEngine, TranslationJob, TranslationTooLong
from rendition.service.errors import APIError, invalid
from rendition.service.schemas import DetectedLanguage
from rendition.service.settings import Settings


def make_options(settings: Settings, fields: Mapping[str, str] | None = None, **values: Any) -> TranslationOptions:
    """``TranslationOptions`` from a request's values (any of its fields; None or left out: the
    default).  ``beam_size`` defaults to RENDITION_DEFAULT_BEAM_SIZE (1 when sampling),
    ``max_length`` to RENDITION_DEFAULT_MAX_LENGTH.  A value the options refuse, or one over this
    deployment's limits (RENDITION_MAX_BEAM_SIZE for the beam and the sampled draws,
    RENDITION_MIN_MAX_LENGTH and RENDITION_MAX_LENGTH_LIMIT for max_length), is a 422 naming the
    request's field: ``fields`` maps an option to it where the request calls it otherwise."""
    values = {k: v for k, v in values.items() if v is not None}
    if "beam_size" not in values:
        values["beam_size"] = 1 if values.get("sampling_topk", 1) != 1 else settings.default_beam_size
    values.setdefault("max_length", settings.default_max_length)

    def refuse(option: str, message: str, kind: str) -> APIError:
        return invalid((fields or {}).get(option, option), message, kind)

    try:
        opts = _options(tuple(sorted(values.items())))
    except InvalidOption as e:
        raise refuse(e.field, str(e), e.kind) from None
    if opts.beam_size > settings.max_beam_size:
        raise refuse(
            "beam_size",
            f"beam_size {opts.beam_size} is out of range; it must be between 1 and {settings.max_beam_size} "
            "(RENDITION_MAX_BEAM_SIZE)",
            "beam_size_out_of_range",
        )
    if opts.sampling and opts.num_hypotheses > settings.max_beam_size:
        raise refuse(
            "num_hypotheses",
            f"{opts.num_hypotheses} draws; the limit is {settings.max_beam_size} (RENDITION_MAX_BEAM_SIZE)",
            "num_hypotheses_out_of_range",
        )
    if opts.max_length < settings.min_max_length:
        raise refuse(
            "max_length",
            f"{opts.max_length} is below the minimum of {settings.min_max_length} (RENDITION_MIN_MAX_LENGTH): "
            "it leaves no room for a translation",
            "max_length_out_of_range",
        )
    if opts.max_length > settings.max_length_limit:
        raise refuse(
            "max_length",
            f"{opts.max_length} is over the limit of {settings.max_length_limit} (RENDITION_MAX_LENGTH_LIMIT)",
            "max_length_out_of_range",
        )
    return opts


@lru_cache(maxsize=256)
def _options(values: tuple[tuple[str, Any], ...]) -> TranslationOptions:
    """``TranslationOptions`` checked once per distinct request values (the route's defaults, mostly),
    not once per request on the event loop."""
    return TranslationOptions(**dict(values))


@lru_cache(maxsize=4)
def detector(languages: tuple[str, ...]) -> LanguageDetector:
    """The language detector over the translator's languages (``source: "auto"``)."""
    return LanguageDetector(languages)


def _too_long(
    where: tuple[int, int], limit: int, source_tokens: int, field: str, opts: TranslationOptions, settings: Settings, retried: bool
) -> APIError:
    i, j = where
    rel = TranslationOptions()
    why = f"max_length {limit}" if limit == opts.max_length else (
        f"{limit} tokens: {rel.max_length_a:g} x its {source_tokens} source tokens with the language tag and </s>, "
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


def engine_decoder(
    request: Request, state: AppState, settings: Settings, texts: list[str], source: str, target: str, field: str, allow_cut: bool,
    first_leg: bool = True,
) -> pipeline.Decode:  # fmt: skip
    """The pipeline's ``decode`` on the service's engine (the inference facade): the first decoding
    admitted as the request's job (a text with no usable tokens: 422; a job that cannot finish
    alone within the request timeout: a 4xx, ``rendition.service.admission``), the second one (and,
    not ``first_leg``, a pivot's second leg) as more units of it.  A translation ended by its length
    limit comes back marked (without ``allow_cut``, the cut hypotheses below an ended best one are dropped)."""

    def admit_units(opts: TranslationOptions) -> Callable[[TranslationEngine, list[list[int]]], AbstractContextManager[inference.Progress | None]]:
        def admit(engine: TranslationEngine, ids: list[list[int]]) -> AbstractContextManager[inference.Progress | None]:
            lens = [len(x) for x in ids]
            limits = max_output_lengths(lens, opts)
            admission.check_alone(admission.translation_units(lens, opts.rows, limits), settings)
            return state.ledger.admit(lens, opts.rows, limits, (source, target))

        return admit

    def admit_job(batch: pipeline.Batch) -> Callable[[TranslationEngine, list[list[int]]], AbstractContextManager[inference.Progress | None]]:
        units = admit_units(batch.options)

        def admit(engine: TranslationEngine, ids: list[list[int]]) -> AbstractContextManager[inference.Progress | None]:
            per_text: list[list[int]] = [[] for _ in texts]
            for i, x in zip(batch.owner, ids):
                per_text[i] += x[1:-1]  # without the target tag and </s>
            fields = [field if len(texts) == 1 else [field, n] for n in range(len(texts))]
            admission.check_usable(engine.translator.tokenizer, per_text, fields, texts)
            return units(engine, ids)

        return admit

    async def decode(batch: pipeline.Batch) -> pipeline.Decoded:
        later = batch.second or not first_leg  # (the request was accepted with its first decoding)
        job = TranslationJob(batch.sentences, source, target, batch.options, truncate=batch.second or allow_cut, admitted=later)
        admit = admit_units(batch.options) if batch.second or not first_leg else admit_job(batch)
        try:
            out = await inference.translate(request, state, settings, job, admit)
        except TranslationTooLong as e:  # (its output: every translation, the cut ones marked)
            out = e.output
        return pipeline.Decoded(out.translations, out.truncated, out.source_tokens)

    return decode


async def translate_texts(
    request: Request,
    state: AppState,
    settings: Settings,
    texts: list[str],
    source: str,
    target: str,
    opts: TranslationOptions,
    truncate: bool | None = None,
    field: str = "text",
    glossary: Glossary | None = None,
) -> tuple[list[Translation], int, list[bool]]:
    """Every text through the text pipeline (``rendition.model.text.pipeline``: sentences,
    placeholders, ``glossary`` terms and the spans to keep (RENDITION_PROTECT_SPANS) as stand-ins,
    all the sentences as one job through the inference facade, each text put back together with
    its own spacing and line breaks).

    Nothing is cut silently: a sentence over the translator's input limit is a 413.  A sentence
    whose translation reaches its length limit without ending is decoded once more with a
    repetition constraint (RENDITION_LENGTH_FALLBACK_NO_REPEAT_NGRAM, counted in
    rendition_length_fallbacks_total); if that does not end either, it is a 422 unless
    ``truncate`` (default RENDITION_TRUNCATE_TRANSLATIONS) allows the cut one.  A sentence with no
    glossary term or span to keep is translated exactly as without them.  Returns (translations,
    source token count, per text whether a sentence of it was cut)."""
    legs = inference.route(state, source, target)
    allow_cut = settings.truncate_translations if truncate is None else truncate
    protection = pipeline.Protection(glossary=glossary, spans=settings.protect_spans)
    decode, fallback_ngram = route_decoder(request, state, settings, texts, legs, field, allow_cut, opts)
    try:
        result = await pipeline.translate(texts, source, decode, opts, protection, fallback_ngram)
    except pipeline.PrefixNeedsOneSentence as e:
        raise invalid([field, e.text], str(e), "target_prefix_text") from None
    except pipeline.SentenceTooLong as e:
        raise APIError(
            413,
            f"{field}[{e.text}]: sentence {e.sentence + 1} is {e.length} tokens long; the translator reads at most "
            f"{e.limit} tokens per sentence (nothing is cut: split it into shorter sentences)",
            kind="sentence_too_long",
            param=field,
        ) from None
    _count(state, result)
    state.metrics.translated(f"{source}-{target}", "direct" if len(legs) == 1 else "english", len(texts))
    if result.cut and not allow_cut:
        raise _cut_error(state, texts, source, legs[-1], opts, settings, field, result)
    for i, t in enumerate(result.translations):
        if len(t.hypotheses) < opts.num_hypotheses:
            raise invalid(
                [field, i] if len(texts) > 1 else field,
                f"only {len(t.hypotheses)} of the {opts.num_hypotheses} hypotheses asked for ended within "
                f"max_length {opts.max_length}; raise max_length or ask for fewer",
                "too_few_hypotheses",
            )
    return result.translations, result.source_tokens, result.truncated


def foreign_language(field: str, found: tuple[str, float], languages: Sequence[str]) -> APIError:
    """The 400 for a text sent with ``source: "auto"`` that is surely in none of the loaded
    languages (``LanguageDetector.foreign``): translating it as one of them gives nonsense."""
    lang, p = found
    return APIError(
        400,
        f"{field}: the text is in {language_name(lang)} ({100 * p:.0f}% sure), which this server does not translate "
        f"(its languages: {', '.join(languages)}); name the source language to translate it as one of them anyway",
        kind="unsupported_language",
        param=field,
    )


def detected_language(language: str, p: float) -> DetectedLanguage:
    """One of the detector's candidates (a language and its probability), its confidence in percent."""
    return DetectedLanguage(confidence=round(100 * p, 1), language=language)


@dataclass
class Pieces:
    """``translate_pieces``'s answer, per text: its pieces' translations, whether one was cut, its
    source language (given or detected) and, with ``source`` "auto", the detector's ranking."""

    translations: list[list[Translation]]
    cut: list[bool]
    sources: list[str]
    found: list[list[tuple[str, float]]] | None
    source_tokens: int


async def translate_pieces(
    request: Request,
    state: AppState,
    settings: Settings,
    texts: list[str],
    pieces: list[list[str]],
    source: str,
    target: str,
    options_for: Callable[[str], TranslationOptions],
    glossary_for: Callable[[str], Glossary | None],
    field: str = "text",
    truncate: bool | None = None,
) -> Pieces:
    """Each text's pieces (the text itself, or the text nodes of an HTML document) through
    ``translate_texts``, from ``source``, or with ``source`` "auto" from each text's detected
    language (the language detector over the loaded translators' languages), a piece that mixes
    them from each of its runs' (``LanguageDetector.runs``: a sentence surely in another of them);
    a text or run in the target language is its own translation.  One job per source language, with
    that language's options and glossary (``options_for``, ``glossary_for``).  A text without
    pieces is left out."""
    found: list[list[tuple[str, float]]] | None = None
    if source == "auto":
        det = detector(loaded_languages(state))
        joined = [" ".join(p) or t for p, t in zip(pieces, texts)]
        for i, text in enumerate(joined):
            if foreign := det.foreign(text):
                raise foreign_language(f"{field}[{i}]" if len(texts) > 1 else field, foreign, det.languages)
        found = [det.detect(text) for text in joined]
        sources = [f[0][0] for f in found]
        runs = Runs.gather(det.runs(p, src) for ps, src in zip(pieces, sources) for p in ps)
    else:
        inference.check_pair(state, source, target)
        sources = [source] * len(texts)
        runs = Runs.single([p for ps in pieces for p in ps], source)
    done: dict[str, list[tuple[Translation, bool]]] = {}  # per language: each run's translation, cut
    tokens = 0
    for src, group in runs.by_language.items():
        if src == target:
            done[src] = [(Translation(p, 0.0, [], [(p, 0.0)]), False) for p in group]
        else:
            got, n, group_cut = await translate_texts(
                request, state, settings, group, src, target, options_for(src), truncate, field=field, glossary=glossary_for(src)
            )
            tokens += n
            done[src] = list(zip(got, group_cut))
    out: list[list[Translation]] = [[] for _ in texts]
    cut = [False] * len(texts)
    owner = [i for i, ps in enumerate(pieces) for _ in ps]
    for i, parts, piece_runs in zip(owner, runs.put_back(done), runs.put_back(runs.by_language)):
        if len(parts) == 1:
            out[i].append(parts[0][0])
        else:  # (a piece that mixes languages: its runs' translations one after the other)
            out[i].append(pipeline.merge(segment.Segmented(piece_runs, [""] * (len(parts) + 1)), [t for t, _ in parts]))
        cut[i] = cut[i] or any(c for _, c in parts)
    return Pieces(out, cut, sources, found, tokens)


def _count_retried(state: AppState, retried: list[bool]) -> None:
    """Second decodings (per sentence: whether it still reached its limit), in the metrics."""
    for still_cut in retried:
        state.metrics.length_fallbacks.labels("limit" if still_cut else "ended").inc()


def _count(state: AppState, result: pipeline.Result) -> None:
    """The second decodings and the glossary terms, in the metrics."""
    _count_retried(state, result.retried)
    placed, missing = result.terms
    if placed:
        state.metrics.glossary_terms.labels("placed").inc(placed)
    if missing:
        state.metrics.glossary_terms.labels("missing").inc(missing)


def route_decoder(
    request: Request, state: AppState, settings: Settings, texts: list[str], legs: list[Leg[str]], field: str,
    allow_cut: bool, opts: TranslationOptions,
) -> tuple[pipeline.Decode, int]:  # fmt: skip
    """The pipeline's ``decode`` of a route and the no-repeat n-gram of the pipeline's own second
    decoding: one leg, the pipeline's; two (through English), ``pipeline.pivot``, each leg its own."""
    decoders = [
        engine_decoder(request, state, settings, texts, leg.source, leg.target, field, allow_cut, first_leg=k == 0)
        for k, leg in enumerate(legs)
    ]
    ngram = settings.length_fallback_no_repeat_ngram
    if len(decoders) == 1:
        return decoders[0], ngram
    again = pipeline.fallback_options(opts, ngram)
    return pipeline.pivot(decoders[0], decoders[1], again, functools.partial(_count_retried, state)), 0


def _cut_error(
    state: AppState, texts: list[str], source: str, last: Leg[str], opts: TranslationOptions, settings: Settings,
    field: str, result: pipeline.Result,
) -> APIError:  # fmt: skip
    """The 422 for the first sentence still cut, naming its length limit (the ``last`` leg's: its
    translator's tokens of the sentence)."""
    i, j = result.cut[0]
    sentence = pipeline.split([texts[i]], source, opts)[0].sentences[j]  # (as the pipeline split it)
    engine = translator_queue(state, last.translator)[0]
    n = len(engine.pre(TranslationJob([sentence], last.source, last.target, opts))[0])
    retried = pipeline.fallback_options(opts, settings.length_fallback_no_repeat_ngram) is not None  # (a pivot: in each leg)
    return _too_long((i, j), max_output_lengths([n], opts)[0], n, field, opts, settings, retried)
