"""The text pipeline every translating path runs: the service's routes, ``rendition translate``,
``rendition translate-file`` and the document formats.

    split -> protect -> decode -> second decoding -> restore -> join

Each text is split into sentences (``segment``); a sentence written in capitals goes on in sentence
case (``casing``); in each sentence its placeholders, glossary terms and the spans that must not
change (``spans``: URLs, paths, code...) become stand-ins (``stand_ins``); all the sentences are
decoded by one call of ``decode`` (the translator's batch call, or the service's engine); a
sentence whose translation reached its length limit without ending is decoded once more with no
n-gram repeated (``fallback_options``); the stand-ins are put back, a sentence sent in capitals
comes back in capitals, and each text is joined again with its own spacing and line breaks.

``decode`` is the only part that differs between the paths, so the same texts with the same
options give the same translations through every one of them.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from rendition.model.text import casing, placeholders, segment, spans
from rendition.model.text.glossary import Glossary, Marked
from rendition.model.text.segment import InputTooLong, Segmented
from rendition.model.text.stand_ins import STAND_INS
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.translator import Translation

DEFAULT_FALLBACK_NGRAM = 4  # the second decoding's no-repeat n-gram size (the service: RENDITION_LENGTH_FALLBACK_NO_REPEAT_NGRAM)


@dataclass(frozen=True)
class Protection:
    """What becomes a stand-in before decoding: ``glossary``'s terms, placeholders (``%s``,
    ``{name}``...) and, with ``spans``, URLs, paths and code (``rendition.model.text.spans``)."""

    glossary: Glossary | None = None
    placeholders: bool = True
    spans: bool = True


@dataclass(frozen=True)
class Batch:
    """One call of ``decode``: the protected sentences, their text (``owner``), and whether this
    is the second, no-repeat decoding of sentences that reached their length limit."""

    sentences: list[str]
    options: TranslationOptions
    owner: list[int]
    second: bool = False


@dataclass(frozen=True)
class Decoded:
    """``decode``'s answer: one translation per sentence, and whether its best hypothesis was
    ended by the length limit (not by </s>)."""

    translations: list[Translation]
    truncated: list[bool]
    source_tokens: int = 0


Decode = Callable[[Batch], Awaitable[Decoded]]


class SentenceTooLong(ValueError):
    """Sentence ``sentence`` (0-based) of text ``text`` is over the translator's input limit."""

    def __init__(self, text: int, sentence: int, length: int, limit: int):
        super().__init__(f"text {text}: sentence {sentence + 1} is {length} tokens long; the limit is {limit}")
        self.text, self.sentence, self.length, self.limit = text, sentence, length, limit


class PrefixNeedsOneSentence(ValueError):
    """A target prefix was given for text ``text``, which has several sentences."""

    def __init__(self, text: int):
        super().__init__("target_prefix needs texts of one sentence each (this one has several)")
        self.text = text


@dataclass(frozen=True)
class Result:
    translations: list[Translation]  # per text
    truncated: list[bool]  # per text: one of its sentences is still cut by its length limit
    cut: list[tuple[int, int]]  # (text, sentence) of each sentence still cut
    retried: list[bool]  # per sentence decoded a second time: whether it still reached its limit
    source_tokens: int = 0
    terms: tuple[int, int] = (0, 0)  # glossary terms placed / missing (appended)
    second_options: TranslationOptions | None = None


@dataclass(frozen=True)
class Guarded:
    """A sentence with its stand-ins, and what each layer replaced (restored in reverse order)."""

    text: str
    placeholders: placeholders.Protected | None = None
    glossary: Marked = field(default_factory=lambda: Marked(""))
    spans: Marked = field(default_factory=lambda: Marked(""))


@functools.lru_cache(maxsize=64)  # (once per request on the service's event loop: the options are few)
def fallback_options(opts: TranslationOptions, ngram: int) -> TranslationOptions | None:
    """The options of the second decoding of a sentence whose translation reached its length limit
    (a repetition loop): no n-gram of ``ngram`` tokens twice; None when that is off (0) or the
    request's own constraint is already as strict."""
    if ngram <= 0 or 0 < opts.no_repeat_ngram_size <= ngram:
        return None
    return replace(opts, no_repeat_ngram_size=ngram)


def protect(sentence: str, protection: Protection, language: str | None = None) -> Guarded:
    """Placeholders, then glossary terms, then the spans to keep (``language``: the sentence's,
    for the person names among them), each layer taking the stand-ins the text does not already hold."""
    held = placeholders.protect(sentence) if protection.placeholders else None
    text = held.text if held is not None else sentence
    terms = protection.glossary.protect(text) if protection.glossary else Marked(text)
    kept = spans.protect(terms.text, STAND_INS, language) if protection.spans else Marked(terms.text)
    return Guarded(kept.text, held if held is not None and held.originals else None, terms, kept)


def _restore_text(g: Guarded, translation: str, counts: list[int] | None = None) -> str:
    text = Glossary.restore(g.spans, translation).text
    terms = Glossary.restore(g.glossary, text)
    if counts is not None:
        counts[0] += terms.placed
        counts[1] += terms.missing
    if g.placeholders is None:
        return terms.text
    exact = placeholders.restore(g.placeholders, terms.text)  # (None: a placeholder lost or repeated)
    return exact if exact is not None else Glossary.restore(Marked("", dict(g.placeholders.originals)), terms.text).text


def restore(g: Guarded, t: Translation, counts: list[int] | None = None) -> Translation:
    """``t`` with the originals in place of the stand-ins (every hypothesis; ``counts``: glossary
    terms placed and missing in the best one)."""
    if g.placeholders is None and not g.glossary.terms and not g.spans.terms:
        return t
    best = _restore_text(g, t.text, counts)
    return Translation(best, t.score, t.tokens, [(_restore_text(g, text), score) for text, score in t.hypotheses])


def _comma(sentence: str, t: Translation) -> Translation:
    """A sentence that ends with a comma (a letter's "Hi Pierre,", "Dear Marie,") keeps it where its
    translation ends with a letter or a digit: the translator tends to drop it."""
    if not sentence.endswith(",") or not any(h[-1:].isalnum() for h, _ in t.hypotheses):
        return t
    hyps = [(h + "," if h[-1:].isalnum() else h, score) for h, score in t.hypotheses]
    return Translation(t.text + "," if t.text[-1:].isalnum() else t.text, t.score, t.tokens, hyps)


def merge(doc: Segmented, parts: Sequence[Translation]) -> Translation:
    """One text's sentence translations -> one Translation: the k-th hypothesis joins every
    sentence's k-th (or its last) with the text's own gaps; scores add up."""
    if not parts:
        return Translation(doc.join([]), 0.0, [], [(doc.join([]), 0.0)])
    nbest = []
    for k in range(max(len(p.hypotheses) for p in parts)):
        picks = [p.hypotheses[min(k, len(p.hypotheses) - 1)] for p in parts]
        nbest.append((doc.join([text for text, _ in picks]), sum(score for _, score in picks)))
    return Translation(nbest[0][0], nbest[0][1], [tok for p in parts for tok in p.tokens], nbest)


def split(texts: Sequence[str], source: str, opts: TranslationOptions) -> list[Segmented]:
    """Every text split into sentences; ``PrefixNeedsOneSentence`` for a target prefix on a text
    of several."""
    docs = [segment.split(t, source, quotes=not opts.target_prefix) for t in texts]  # (a prefix: one sentence)
    if opts.target_prefix:
        for i, doc in enumerate(docs):
            if len(doc.sentences) > 1:
                raise PrefixNeedsOneSentence(i)
    return docs


async def _second_decoding(
    decode: Decode, batch: Batch, first: Decoded, again: TranslationOptions | None
) -> tuple[list[Translation], list[bool], list[bool]]:
    """The sentences that reached their limit decoded again with ``again``; a second translation
    that ends replaces the first.  Returns (translations, still cut, per retried sentence: still cut)."""
    out, cut = list(first.translations), list(first.truncated)
    redo = [k for k, c in enumerate(cut) if c]
    if again is None or not redo:
        return out, cut, []
    retry = Batch([batch.sentences[k] for k in redo], again, [batch.owner[k] for k in redo], second=True)
    fixed = await decode(retry)
    for k, t, c in zip(redo, fixed.translations, fixed.truncated):
        if not c:
            out[k], cut[k] = t, False
    return out, cut, list(fixed.truncated)


Retried = Callable[[list[bool]], None]  # told, per sentence decoded a second time, whether it still reached its limit


def with_second_decoding(decode: Decode, again: TranslationOptions | None, retried: Retried | None = None) -> Decode:
    """``decode`` followed by its own second decoding (``again``) of the sentences that reached
    their length limit: one leg of a pivot, as the pipeline decodes a direct pair."""

    async def run(batch: Batch) -> Decoded:
        first = await decode(batch)
        done, cut, still = await _second_decoding(decode, batch, first, again)
        if retried is not None and still:
            retried(still)
        return Decoded(done, cut, first.source_tokens)

    return run


def pivot(first: Decode, second: Decode, again: TranslationOptions | None, retried: Retried | None = None) -> Decode:
    """A ``decode`` through a pivot language: ``first`` (source -> pivot) then ``second`` (pivot ->
    target) on its best translations, each leg with its own second decoding (``again``; the
    pipeline around it then runs none: ``translate(..., fallback_ngram=0)``).  The stand-ins
    (placeholders, glossary terms, spans) pass through both legs; a target prefix is the second
    leg's only.  A sentence is cut when either leg cut it.  ``retried``: told of each leg's second decodings."""
    legs = with_second_decoding(first, again, retried), with_second_decoding(second, again, retried)

    async def run(batch: Batch) -> Decoded:
        into_pivot = replace(batch, options=replace(batch.options, target_prefix=()))
        a = await legs[0](into_pivot)
        b = await legs[1](replace(batch, sentences=[t.text for t in a.translations]))
        return Decoded(b.translations, [x or y for x, y in zip(a.truncated, b.truncated)], a.source_tokens)

    return run


async def translate(
    texts: Sequence[str],
    source: str,
    decode: Decode,
    opts: TranslationOptions,
    protection: Protection = Protection(),
    fallback_ngram: int = DEFAULT_FALLBACK_NGRAM,
) -> Result:
    """``texts`` through the whole pipeline (module docstring).  ``SentenceTooLong`` for a sentence
    over the translator's input limit (nothing is cut); a translation still cut after the second
    decoding is kept and reported (``Result.truncated``, ``Result.cut``)."""
    docs = split(texts, source, opts)
    owner = [(i, j) for i, doc in enumerate(docs) for j in range(len(doc.sentences))]
    sentences = [s for doc in docs for s in doc.sentences]
    # (a sentence in capitals goes in sentence case, and its translation comes back in capitals;
    # not with a target prefix, which the translation must start with as written)
    cased = [casing.quiet(s, source) if not opts.target_prefix and casing.shouted(s, source) else None for s in sentences]
    guarded = [protect(c[0] if c else s, protection, source) for s, c in zip(sentences, cased)]
    batch = Batch([g.text for g in guarded], opts, [i for i, _ in owner])
    try:
        first = await decode(batch)
    except InputTooLong as e:
        i, j = owner[e.index]
        raise SentenceTooLong(i, j, e.length, e.limit) from None
    again = fallback_options(opts, fallback_ngram)
    done, cut, retried = await _second_decoding(decode, batch, first, again)
    counts = [0, 0]
    done = [restore(g, t, counts) for g, t in zip(guarded, done)]
    done = [casing.loud(t, c[1]) if c else t for t, c in zip(done, cased)]
    done = [_comma(s, t) for s, t in zip(sentences, done)]
    out, truncated, start = [], [], 0
    for doc in docs:
        end = start + len(doc.sentences)
        out.append(merge(doc, done[start:end]))
        truncated.append(any(cut[start:end]))
        start = end
    still = [owner[k] for k, c in enumerate(cut) if c]
    return Result(out, truncated, still, retried, first.source_tokens, (counts[0], counts[1]), again)
