"""Language identification restricted to the languages a model serves.

``py3langid`` (a maintained fork of langid.py: a naive Bayes model over byte n-grams, shipped in
its wheel, nothing downloaded) limited to the model's languages.  On the held-out DDTP test split
it picks the right one of en/fr for 99.1% of the 3,000 lines (both sides; lingua: 98.1%), and of
en/fr/de for 98.3% of the 5,114 en-fr and en-de lines (lingua: 97.1%), in 30-60 us a line
(``benchmarks/bench_language_id.py``).

    detector = LanguageDetector(("en", "fr"))
    detector.detect("Bonjour tout le monde")   # [("fr", 0.999...), ("en", 0.0007...)]
    detector.foreign("Guten Morgen, wie geht es dir?")   # ("de", 0.992...): none of en/fr

``runs`` cuts a text that mixes the model's languages at its sentences: a sentence of at least
``RUN_MIN_WORDS`` words and ``RUN_MIN_CHARS`` characters identified with at least
``RUN_CONFIDENCE`` as another of the model's languages than the text's starts a run of its own;
a sentence identified less surely (a short "Merci !") stays in the text's language.  On the
22,504 sentences of the committed en-fr test splits and four valid splits (both sides, each
sentence alone) it names the right language for 73% of them and a wrong one for none.

    detector.runs("I bought bread. Ma sœur habite à Lyon.", "en")
    # [("I bought bread. ", "en"), ("Ma sœur habite à Lyon.", "fr")]

``Runs`` gathers many texts' runs per language (one job per source language) and puts each
language's results back in each text's order:

    runs = Runs.gather(detector.runs(text, "en") for text in texts)
    done = {lang: translate(lang, group) for lang, group in runs.by_language.items()}
    runs.put_back(done)   # per text, its runs' results in order

``foreign`` asks the identifier over all its 97 languages whether a text is in none of the model's:
only for a text of at least ``FOREIGN_MIN_CHARS`` characters identified with at least
``FOREIGN_CONFIDENCE``, so that a short or mixed English or French text is never taken for another
language.  Over the 25,084 sides of the committed en-fr test and valid splits it finds none; it
finds 67% of the 10,055 German sides of the en-de splits of 20 characters or more (the rest it
takes for German with less confidence, mostly software strings full of names and English words:
"CompizConfig-Profil importieren").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from rendition.model.text import segment

FOREIGN_MIN_CHARS = 20
FOREIGN_CONFIDENCE = 0.95
RUN_MIN_WORDS = 3
RUN_MIN_CHARS = 15
RUN_CONFIDENCE = 0.99
_WORD = re.compile(r"[^\W\d_]{2,}")
# the names of the languages a request is most likely to be written in, for messages
NAMES = {"de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "ru": "Russian", "sv": "Swedish", "da": "Danish",
         "no": "Norwegian", "fi": "Finnish", "cs": "Czech", "tr": "Turkish", "ro": "Romanian", "hu": "Hungarian", "el": "Greek", "uk": "Ukrainian", "ja": "Japanese",
         "zh": "Chinese", "ko": "Korean", "ar": "Arabic", "he": "Hebrew", "hi": "Hindi", "ca": "Catalan", "en": "English", "fr": "French"}  # fmt: skip


def language_name(code: str) -> str:
    """ "German (de)", or the code alone where no name is listed."""
    return f"{NAMES[code]} ({code})" if code in NAMES else code


class LanguageDetector:
    def __init__(self, languages: Sequence[str]):
        self._identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        self._any = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)  # all its languages
        unknown = sorted(set(languages) - set(self._identifier.nb_classes))
        if unknown:
            raise ValueError(f"no language identification for {', '.join(unknown)}")
        self.languages = tuple(languages)
        if len(self.languages) > 1:
            self._identifier.set_languages(list(self.languages))

    def detect(self, text: str) -> list[tuple[str, float]]:
        """Every language with its probability (they sum to 1), most likely first."""
        if len(self.languages) == 1:
            return [(self.languages[0], 1.0)]
        return [(lang, float(p)) for lang, p in self._identifier.rank(text)]

    def runs(self, text: str, language: str) -> list[tuple[str, str]]:
        """``text`` (in ``language`` as a whole: a text's own detection, or its document's) cut at
        the start of each sentence surely in another of the detector's languages and of the sentence
        after it (module docstring): its runs, each with its language.  The runs join back to
        ``text``; a text in one language is one run."""
        if len(self.languages) == 1:
            return [(text, language)]
        doc = segment.split(text, language, quotes=False)
        if not doc.sentences:
            return [(text, language)]
        starts: list[int] = []  # where each run starts (the first at 0: the opening gap goes with it)
        langs: list[str] = []
        at = len(doc.gaps[0])
        for sentence, gap in zip(doc.sentences, doc.gaps[1:]):
            lang = language
            if len(sentence) >= RUN_MIN_CHARS and len(_WORD.findall(sentence)) >= RUN_MIN_WORDS:
                found, p = self.detect(sentence)[0]
                lang = found if p >= RUN_CONFIDENCE else language
            if not langs or lang != langs[-1]:
                starts.append(at if langs else 0)
                langs.append(lang)
            at += len(sentence) + len(gap)
        ends = starts[1:] + [len(text)]
        return [(text[a:b], lang) for a, b, lang in zip(starts, ends, langs)]

    def foreign(self, text: str) -> tuple[str, float] | None:
        """The language ``text`` is written in, with its probability, when that is surely none of
        the detector's languages (module docstring); None otherwise."""
        if len(text.strip()) < FOREIGN_MIN_CHARS:
            return None
        lang, p = self._any.classify(text)
        return (str(lang), float(p)) if lang not in self.languages and p >= FOREIGN_CONFIDENCE else None


T = TypeVar("T")


@dataclass(frozen=True)
class Runs:
    """Texts cut into runs of one language each (``LanguageDetector.runs``, or one run per text):
    the runs per language, and where each text's runs are among them."""

    by_language: dict[str, list[str]]
    where: list[list[tuple[str, int]]]  # per text: (language, index in by_language[language]) of each run

    @classmethod
    def gather(cls, texts_runs: Iterable[list[tuple[str, str]]]) -> Runs:
        """From each text's runs (``LanguageDetector.runs``), each with its language."""
        by_language: dict[str, list[str]] = {}
        where: list[list[tuple[str, int]]] = []
        for runs in texts_runs:
            mine = []
            for run, lang in runs:
                group = by_language.setdefault(lang, [])
                mine.append((lang, len(group)))
                group.append(run)
            where.append(mine)
        return cls(by_language, where)

    @classmethod
    def single(cls, texts: Sequence[str], language: str) -> Runs:
        """Each text one run in ``language``."""
        return cls({language: list(texts)} if texts else {}, [[(language, k)] for k in range(len(texts))])

    def put_back(self, done: Mapping[str, Sequence[T]]) -> list[list[T]]:
        """Per text, the results of its runs in order (``done``: per language, one result per run of
        ``by_language[language]``); ``put_back(by_language)`` gives each text's runs."""
        return [[done[lang][k] for lang, k in mine] for mine in self.where]
