"""Person first names, companies and products, which a translation keeps as written: "Pierre et
Camille arrivent demain." -> "Pierre and Camille arrive tomorrow.", not "Peter and Camilla".

The list (``names.tsv``, built by ``scripts/build_names.py``: first names from Faker's French and
English person providers, a list of companies and products) flags the names that are also common
words of a language ("Rose", "Mark", "Word"; "Pierre", "Orange" in French).  ``name_spans`` finds a
listed name written with its capital:

- a name that is no common word of the text's language, anywhere, a person's with the capitalised
  word that follows it as its surname ("Emily Watson", "Jean-Pierre Martin");
- a name that is also a common word, only where its capital says it is a name: inside the sentence
  and outside Title Case ("Tell Mark that...", not "Mark All as Read"), or a person's first in a
  French sentence before a verb, a pronoun or a comma ("Pierre arrive", "Marie est", not "Lance des
  missiles": a French noun opens a sentence with its article), or before "and" / "et" / "&" and
  another name ("Rose et Paul...").

A first name that is also a well-known place ("Paris", "Florence", "Nancy", "Victoria") is a place
after a preposition of place ("in Paris", "dans", "près de"), or after "to", "from", "at", "à", "de"
or "pour" that a verb of place or movement leads ("lives in", "going to Paris", "je viens de
Nancy", "elle est née à Florence"; not "tell it to Victoria", "je parle à Florence"), and is not
kept: a person's stand-in there would make the translator write a person's grammar around a town
("J'habite en Paris"); the translator knows its towns and writes them itself.

``rendition.model.text.spans`` gives each one a stand-in, like the other spans to keep.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

_UPPER, _LOWER = "A-ZÀ-ÖØ-Þ", "a-zß-öø-ÿ"
WORD = rf"[{_UPPER}][{_LOWER}]+(?:-[{_UPPER}][{_LOWER}]+)?"  # a capitalised word, or two joined by a hyphen
CAPITALISED = re.compile(rf"(?<![\w@./\\-]){WORD}(?![\w@/\\-]|\.\w)")
_SENTENCE_START = re.compile(r"(?:^|[.!?…:;]\s+|[«“\"(\[—–-]\s*)$")
# what follows a first name that opens a French sentence (a verb, a pronoun, a comma), not a noun's complement
_FR_AFTER_NAME = re.compile(
    r"(?:,|\s+(?:est|a|va|vient|arrive|part|dit|fait|peut|veut|doit|aime|habite|travaille|sera|était|avait|"
    r"et|ne|n'|n’|s'|s’|m'|m’|t'|t’|l'|l’|nous|vous|lui|leur|me|te|se|y|en)(?![\w'’]))"
)
_AND_NAME = re.compile(rf"\s+(?:and|et|&)\s+({WORD})")
_NEXT = re.compile(r"\s*(\S)")  # the next word's first letter, or punctuation
_PREVIOUS_WORD = re.compile(r"(\S+)\s+$")
# listed first names that are also well-known towns, countries or states, and the prepositions that
# make them places
PLACES = frozenset(
    "Alexandria Aurora Brooklyn Charlotte Chelsea Florence Georgia Jackson Jena Jordan Kingston Lincoln "
    "Lourdes Madison Milan Nancy Oran Paris Phoenix Preston Regina Rosario Sofia Sydney Victoria Virginia".split()
)
_TO_A_PLACE = (  # a word that makes an ambiguous preposition ("to", "from", "à", "de") one of place
    r"live[sd]?|living|go|goes|going|went|gone|come|comes|coming|came|fly|flies|flying|flew|flown|travel\w*|"
    r"move[sd]?|moving|born|arrive[sd]?|arriving|back|trip|way|flight|train|return\w*|stay\w*|work(?:s|ed|ing)?|"
    r"am|is|are|was|were|be|been|city|town|"
    r"habit\w*|vis|vit|viv\w*|vécu|va|vas|vais|allons|allez|vont|aller|allée?s?|viens|vient|venons|venez|"
    r"viennent|venir|venue?s?|suis|es|est|sommes|êtes|sont|étai\w*|été|née?s?|arriv\w*|pars|part|partir|"
    r"partons|partez|partent|partie?s?|retour\w*|rentr\w*|travaill\w*|séjour\w*|voyag\w*|vol|billet|"
    r"déménag\w*|rest(?:e|es|ons|ez|ent|er|ée?s?)|ville"
)
_PLACE_BEFORE = re.compile(
    rf"(?<![\w'’-])(?:(?:{_TO_A_PLACE})\s+(?:to|from|at|à|de|d'|d’|pour)|(?:from|de)\s+\S+\s+(?:to|à)|"
    r"in|near|into|around|across|outside|via|visit|visits|visited|visiting|en|dans|depuis|près de|jusqu'à|jusqu’à|"
    r"visiter|visité)\s*$",
    re.IGNORECASE,
)
_SURNAME = re.compile(rf" (?!(?:And|Et|The|Le|La|Les|De|Du|Des|Of|From|To|À|En|In|On)\b)({WORD})(?![\w@/\\-])")


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, tuple[bool, bool]], dict[str, str]]:
    """(every name -> its common-word flags, every person's first name -> "f", "m" or "")."""
    text = resources.files("rendition.model.text").joinpath("names.tsv").read_text(encoding="utf-8")
    flags, people = {}, {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, kind, en, fr, gender = line.split("\t")
            flags[name] = (en == "1", fr == "1")
            if kind == "person":
                people[name] = gender
    return flags, people


def known_names() -> dict[str, tuple[bool, bool]]:
    """Every listed name -> (also a common English word, also a common French word)."""
    return _table()[0]


def is_person(name: str) -> bool:
    """A listed person's first name (or a compound of two: "Jean-Pierre")."""
    return all(part in _table()[1] for part in name.split("-"))


def gender(name: str) -> str | None:
    """"f" or "m" for a person's name whose first name is listed with one gender only ("Sarah",
    "Emily Watson", "Jean-Pierre": its first part), else None ("Camille", a company, not a name)."""
    first = name.split(" ")[0]
    return (_table()[1][first.split("-")[0]] or None) if is_person(first) else None


def _common(flags: tuple[bool, bool], language: str | None) -> bool:
    en, fr = flags
    return {"en": en, "fr": fr}.get(language or "", en or fr)


def common_word(name: str, language: str | None) -> bool:
    """A listed name that is also a common word of ``language`` ("Rose", "Pierre" in French)."""
    flags = known_names().get(name)
    return flags is not None and _common(flags, language)


def _listed(word: str) -> tuple[bool, bool] | None:
    """The flags of a listed name, or of a compound of two ("Jean-Pierre": common when either part is)."""
    names = known_names()
    if word in names:
        return names[word]
    parts = word.split("-")
    if len(parts) == 2 and parts[0] in names and parts[1] in names:
        (a, b), (c, d) = names[parts[0]], names[parts[1]]
        return a and c, b and d
    return None


def name_spans(text: str, language: str | None = None) -> list[tuple[int, int]]:
    """(start, end) of each name in ``text`` (module docstring); ``language``: the text's
    ("en", "fr"; None: a name common in either counts as common)."""
    out: list[tuple[int, int]] = []
    for m in CAPITALISED.finditer(text):
        flags = _listed(m.group())
        if flags is None or (out and m.start() < out[-1][1]):
            continue
        start, end = m.span()
        if m.group() in PLACES and _PLACE_BEFORE.search(text, max(0, start - 64), start):
            continue  # a town after "in", "à" ...: the translator's own (module docstring)
        if not _common(flags, language):
            surname = _SURNAME.match(text, end) if is_person(m.group()) else None
            if surname and _listed(surname.group(1)) is None:
                end = surname.end()
            out.append((start, end))
            continue
        first = bool(_SENTENCE_START.search(text, 0, start))
        nxt = _NEXT.match(text, end)
        pair = _AND_NAME.match(text, end)
        if pair and _listed(pair.group(1)) is not None:
            out.append((start, end))
            continue
        if nxt is not None and nxt.group(1).isupper():
            continue  # Title Case ("Mark All as Read", "Rose Garden")
        if first:
            if language == "fr" and is_person(m.group()) and _FR_AFTER_NAME.match(text, end):
                out.append((start, end))
            continue
        previous = _PREVIOUS_WORD.search(text, 0, start)
        if previous and previous.group(1)[0].isupper() and not _SENTENCE_START.search(text, 0, previous.start()):
            continue  # Title Case before it ("Click Add Rose")
        out.append((start, end))
    return out
