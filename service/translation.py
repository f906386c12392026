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

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import lru_cache
from typing import Any

from fastapi import Request

from rendition.model import segment
from rendition.model.glossary import Glossary, Marked
from rendition.model.language_id import LanguageDetector
from rendition.model.segment import InputTooLong, Segmented
from rendition.model.translation.options import InvalidOption, TranslationOptions
from rendition.model.translation.search import max_output_lengths
from rendition.model.translation.translator import Translation
from rendition.service import admission, inference
from rendition.service.deps import AppState, engine_or_503
from rendition.service.engines import TranslationEngine, TranslationJob, TranslationTooLong
from rendition.service.errors import APIError, invalid
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
        opts = TranslationOptions(**values)
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


@lru_cache(maxsize=4)
def detector(languages: tuple[str, ...]) -> LanguageDetector:
    """The language detector over the translator's languages (``source: "auto"``)."""
    return LanguageDetector(languages)


def _merge(doc: Segmented, parts: list[Translation]) -> Translation:
    """One text's sentence translations -> one Translation: the k-th hypothesis joins every
    sentence's k-th (or its last) with the text's own gaps; scores add up."""
    nbest = []
    for k in range(max(len(p.hypotheses) for p in parts)):
        picks = [p.hypotheses[min(k, len(p.hypotheses) - 1)] for p in parts]
        nbest.append((doc.join([text for text, _ in picks]), sum(score for _, score in picks)))
    return Translation(nbest[0][0], nbest[0][1], [tok for p in parts for tok in p.tokens], nbest)


def fallback_options(settings: Settings, opts: TranslationOptions) -> TranslationOptions | None:
    """The options of the second decoding of a sentence whose translation reached its length limit
    (a repetition loop): no n-gram of RENDITION_LENGTH_FALLBACK_NO_REPEAT_NGRAM tokens twice; None
    when that is off or the request's own constraint is already as strict."""
    n = settings.length_fallback_no_repeat_ngram
    if n <= 0 or 0 < opts.no_repeat_ngram_size <= n:
        return None
    return replace(opts, no_repeat_ngram_size=n)


def _too_long(
    e: TranslationTooLong, owner: list[tuple[int, int]], field: str, opts: TranslationOptions, settings: Settings, retried: bool
) -> APIError:
    i, j = owner[e.index]
    rel = TranslationOptions()
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
    opts: TranslationOptions,
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

    def admit(engine: TranslationEngine, ids: list[list[int]]) -> AbstractContextManager[inference.Progress | None]:
        """422 for a text with no usable tokens; a 4xx for a job that cannot finish alone within
        the request timeout (rendition.service.admission); else the ledger entry held while it runs."""
        per_text: list[list[int]] = [[] for _ in docs]
        for (i, _), x in zip(owner, ids):
            per_text[i] += x[1:-1]  # without the target tag and </s>
        admission.check_usable(
            engine.translator.tokenizer, per_text, [field if len(texts) == 1 else [field, n] for n in range(len(docs))], texts
        )
        return admit_units(engine, ids)

    def admit_units(engine: TranslationEngine, ids: list[list[int]]) -> AbstractContextManager[inference.Progress | None]:
        lens = [len(x) for x in ids]
        limits = max_output_lengths(lens, opts)
        admission.check_alone(admission.translation_units(lens, opts.rows, limits), settings)
        return state.ledger.admit(lens, opts.rows, limits, (source, target))

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
        limit = max_output_lengths([n], opts)[0]
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
