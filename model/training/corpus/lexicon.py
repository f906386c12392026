"""A bilingual lexicon of daily life (English -> French nouns with gender and category), built only
from what Debian bookworm and PyPI ship:

- **FreeDict** eng-fra and fra-eng (``dict-freedict-*``): the candidate translations of a word; a
  pair both dictionaries give (English -> French and back) is *confirmed*;
- **WordNet** 3.0 (``wordnet-base``): the word's category, from the hypernyms of its first
  (most frequent) senses: a ``relative`` is family, a ``garment`` clothing, a ``building`` a place ...;
- **CLDR** (``unicode-cldr-core``): emoji names and keywords in both languages (an English and a
  French keyword of the same emoji that FreeDict pairs too: "dog" / "chien"), and the calendar
  (week days and months);
- **pyrealb** (PyPI): its English and French lexicons, which give the French gender and the
  inflection tables the sentence realiser needs (a word missing from either is left out);
- **Apertium** (``apertium-eng-spa`` + ``apertium-fr-es``, ``apertium-eng-cat`` +
  ``apertium-fra-cat``, ``apertium-eo-en`` + ``apertium-eo-fr``): English -> French through three
  pivot languages (``apertium.triangulate``); a French noun two pivots give, or one pivot and
  FreeDict, is confirmed too, and the number of sources ranks the candidates ("plate":
  "assiette", not "plaque"; "table": "table", not "liste"; "car": "voiture", not "auto"); they add
  the nouns FreeDict lacks (supermarket, fridge, bedroom);
- **wordfreq** (PyPI): word frequencies, which break the remaining ties between confirmed French
  translations (the most common wins) and rank the English nouns from common to rare.

``build_lexicon(root)`` reads the unpacked packages under ``root`` (``debian.fetch`` + ``extract``
of ``LEXICON_PACKAGES``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from rendition.model.training.corpus import freedict
from rendition.model.training.corpus.apertium import APERTIUM_PACKAGES, triangulate
from rendition.model.training.corpus.offensive import is_offensive

LEXICON_PACKAGES = ("dict-freedict-eng-fra", "dict-freedict-fra-eng", "wordnet-base", "unicode-cldr-core", *APERTIUM_PACKAGES)
MIN_ZIPF = 3.0  # English nouns outside FreeDict are looked up in Apertium from this frequency on

# WordNet synsets (lemma of the synset, lexicographer file) whose hyponyms make a category
CATEGORIES: dict[str, tuple[tuple[str, str], ...]] = {
    "family": (("relative", "noun.person"), ("spouse", "noun.person"), ("child", "noun.person")),
    "person": (("adult", "noun.person"), ("friend", "noun.person"), ("worker", "noun.person"), ("juvenile", "noun.person")),
    "animal": (("animal", "noun.Tops"), ("domestic_animal", "noun.animal"), ("bird", "noun.animal"), ("fish", "noun.animal"), ("insect", "noun.animal")),
    "food": (("food", "noun.Tops"), ("food", "noun.food"), ("foodstuff", "noun.food"), ("dish", "noun.food"), ("beverage", "noun.food"), ("edible_fruit", "noun.food"), ("vegetable", "noun.food"), ("baked_goods", "noun.food")),
    "clothing": (("clothing", "noun.artifact"), ("garment", "noun.artifact"), ("footwear", "noun.artifact"), ("headdress", "noun.artifact")),
    "furniture": (("furniture", "noun.artifact"), ("home_appliance", "noun.artifact")),
    "object": (("container", "noun.artifact"), ("toy", "noun.artifact"), ("implement", "noun.artifact"), ("kitchen_utensil", "noun.artifact"), ("tableware", "noun.artifact"), ("device", "noun.artifact")),
    "vehicle": (("vehicle", "noun.artifact"), ("conveyance", "noun.artifact")),
    "place": (("building", "noun.artifact"), ("shop", "noun.artifact"), ("establishment", "noun.artifact"), ("room", "noun.artifact"), ("facility", "noun.artifact"), ("place_of_business", "noun.artifact"),
              ("urban_area", "noun.location"), ("rural_area", "noun.location"), ("residential_district", "noun.location"), ("settlement", "noun.location")),
    "outdoors": (("geological_formation", "noun.object"), ("body_of_water", "noun.object"), ("tract", "noun.location"), ("thoroughfare", "noun.artifact")),
    "body": (("body_part", "noun.body"), ("external_body_part", "noun.body")),
    "plant": (("plant", "noun.Tops"), ("flower", "noun.plant"), ("tree", "noun.plant")),
    "time": (("time_period", "noun.time"), ("meal", "noun.food")),
}
# a word in no category above: its first sense's lexicographer file
FALLBACK = {"noun.artifact": "thing", "noun.phenomenon": "weather", "noun.food": "food", "noun.animal": "animal", "noun.plant": "plant", "noun.body": "body", "noun.person": "person"}
_LEXNAMES = "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity noun.relation noun.shape noun.state noun.substance noun.time".split()
_WORD = re.compile(r"^[a-zà-ÿœæ][a-zà-ÿœæ'-]*$")
# WordNet's gloss of a slur or an insult ("(ethnic slur) extremely offensive name for ...",
# "obscene terms for ..."); "the team is on the offensive" is not one
_OFFENSIVE_GLOSS = re.compile(r"ethnic slur|\boffensive (?:term|name|slang|word)|\bobscene (?:term|word)|\bvulgar (?:slang|term)", re.I)


@dataclass(frozen=True)
class Noun:
    en: str
    fr: str
    gender: str  # "m" or "f" (French)
    category: str
    confirmed: bool  # both FreeDict directions give the pair, or two Apertium pivots, or one and FreeDict, or an emoji's keywords
    rank: int  # lower is more common: 10 x (7 - the English word's Zipf frequency)
    countable: bool = True  # pyrealb's English lexicon: "water", "bread" take no "a" and no plural
    sources: int = 0  # independent sources giving the pair (FreeDict both ways, Esperanto, Spanish or Catalan)
    back: bool = False  # FreeDict's fra-eng gives this English noun for the French one
    direction: str = "both"  # the pairs it is placed in train "both" ways, or only "en-fr" / "fr-en"


class WordNet:
    """The noun half of WordNet 3.0's database files: each lemma's senses, each synset's
    lexicographer file and hypernyms."""

    def __init__(self, root: Path) -> None:
        self.senses: dict[str, list[int]] = {}
        for line in (root / "index.noun").read_text(encoding="utf-8").splitlines():
            if line.startswith(" "):
                continue
            f = line.split()
            n_ptr = int(f[3])
            n_senses = int(f[2])
            offsets = f[4 + n_ptr + 2 :]
            self.senses[f[0]] = [int(o) for o in offsets[:n_senses]]
        self.lex: dict[int, str] = {}
        self.lemmas: dict[int, list[str]] = {}
        self.hyper: dict[int, list[int]] = {}
        self.slurs: set[int] = set()  # synsets whose gloss marks a slur or an insult
        self.instances: set[int] = set()  # synsets of one named thing ("Nice", an instance of city)
        for line in (root / "data.noun").read_text(encoding="utf-8").splitlines():
            if line.startswith(" "):
                continue
            head, _, gloss = line.partition(" | ")
            f = head.split()
            off, lexnum, n_words = int(f[0]), int(f[1]), int(f[3], 16)
            words = [f[4 + 2 * i].lower() for i in range(n_words)]
            i = 4 + 2 * n_words
            n_ptr = int(f[i])
            ptrs = [f[i + 1 + 4 * k : i + 5 + 4 * k] for k in range(n_ptr)]
            self.lex[off] = _LEXNAMES[lexnum]
            self.lemmas[off] = words
            self.hyper[off] = [int(p[1]) for p in ptrs if p[0] in ("@", "@i")]
            if any(p[0] == "@i" for p in ptrs):
                self.instances.add(off)
            if _OFFENSIVE_GLOSS.search(gloss):
                self.slurs.add(off)

    def offensive(self, word: str) -> bool:
        """Whether the word's most frequent sense is a slur or an insult ("nigger", "dyke"; not
        "boy" or "cock", whose first senses are a young man and a rooster)."""
        offs = self.senses.get(word.lower().replace(" ", "_"), [])
        return bool(offs) and offs[0] in self.slurs

    def ancestors(self, off: int) -> set[tuple[str, str]]:
        seen, out, todo = set(), set(), [off]
        while todo:
            o = todo.pop()
            if o in seen:
                continue
            seen.add(o)
            out |= {(w, self.lex[o]) for w in self.lemmas[o]}
            todo += self.hyper.get(o, [])
        return out

    def category(self, word: str, senses: int = 3) -> str | None:
        """The category of a word's first senses: the first CATEGORIES entry an ancestor names,
        else the lexicographer file of the first sense when it is in FALLBACK.  A sense that names
        one thing (the city of Nice, for "nice") has none."""
        offs = [o for o in self.senses.get(word.lower().replace(" ", "_"), []) if o not in self.instances]
        for off in offs[:senses]:
            anc = self.ancestors(off)
            for cat, marks in CATEGORIES.items():
                if any(m in anc for m in marks):
                    return cat
        # no category in the first senses ("football": a game, then the ball): the first of them
        # whose lexicographer file FALLBACK names
        return next((FALLBACK[self.lex[o]] for o in offs[:senses] if self.lex[o] in FALLBACK), None)

    def compounds(self) -> list[str]:
        """Two-word nouns ("living room", "post office", "town hall")."""
        return sorted(w.replace("_", " ") for w in self.senses if w.count("_") == 1 and all(_WORD.match(x) for x in w.split("_")))


def _pyrealb_lexicons() -> tuple[dict, dict]:
    import pyrealb

    pyrealb.loadEn()
    en = dict(pyrealb.getLexicon())
    pyrealb.loadFr()
    fr = dict(pyrealb.getLexicon())
    return en, fr


@cache
def lexicons() -> tuple[dict, dict]:
    return _pyrealb_lexicons()


def pyrealb_form(fr: str) -> str:
    """pyrealb's French lexicon writes the ligature œ as "oe"."""
    return fr.replace("œ", "oe")


def _dictionary(root: Path, name: str) -> dict[str, list[str]]:
    index = next(root.glob(f"**/usr/share/dictd/freedict-{name}.index"))
    out: dict[str, list[str]] = defaultdict(list)
    for word, trans in freedict.entries(index, index.with_name(index.name.replace(".index", ".dict.dz"))):
        out[word].extend(t for t in trans if t not in out[word])
    return out


def cldr_calendar(root: Path, lang: str) -> dict[str, dict[str, str]]:
    """Week days and months (stand-alone wide forms of the Gregorian calendar) from CLDR."""
    text = next(root.glob(f"**/usr/share/unicode/cldr/common/main/{lang}.xml")).read_text(encoding="utf-8")
    greg = text[text.index('<calendar type="gregorian">') :]
    greg = greg[: greg.index("</calendar>")]
    out: dict[str, dict[str, str]] = {}
    for kind, tag in (("days", "day"), ("months", "month")):
        block = greg[greg.index(f"<{kind}>") :]
        block = block[block.index(f'<{tag}Width type="wide">') :]
        block = block[: block.index(f"</{tag}Width>")]
        out[kind] = dict(re.findall(rf'<{tag} type="(\w+)">([^<]+)</{tag}>', block))
    return out


def cldr_emoji(root: Path, lang: str) -> dict[str, set[str]]:
    """Each emoji's name and keywords (single words, lower case) in one language."""
    text = next(root.glob(f"**/usr/share/unicode/cldr/common/annotations/{lang}.xml")).read_text(encoding="utf-8")
    out: dict[str, set[str]] = defaultdict(set)
    for cp, words in re.findall(r'<annotation cp="([^"]+)"[^>]*>([^<]+)</annotation>', text):
        for w in words.split("|"):
            out[cp] |= {x.strip().lower() for x in [w] + w.split() if x.strip()}
    return out


_COMPOUND_FR = re.compile(r"^([a-zà-ÿœæ-]+) ((?:de|à|en) [a-zà-ÿœæ' -]+|d'[a-zà-ÿœæ-]+)$")
_PRE_ADJECTIVES = ("petit", "grand", "bon", "beau", "premier")
COMPOUND_MIN_ZIPF = 4.0  # both words of an English two-word noun at least this common
COMPOUND_RANK = 5  # rank penalty of a two-word noun: wordfreq rates a phrase near its rarer word
ALTERNATIVE_SOURCES = 2  # a noun's second French word is kept when this many sources give it ...
ALTERNATIVE_MIN_ZIPF = 3.0  # ... and it is this common in French
ALTERNATIVE_RANK = 5  # rank penalty of the second word: placed in fewer sentences than the first
BACK_WORD_CATEGORIES = ("animal", "food", "clothing", "furniture", "object", "vehicle", "place", "outdoors", "body", "plant")


def split_french(fr: str) -> tuple[str, str, str]:
    """(words before the head, head noun, words after it): "salle de bain" -> ("", "salle", "de
    bain"); "petit déjeuner" -> ("petit", "déjeuner", ""); "chien" -> ("", "chien", "")."""
    m = _COMPOUND_FR.match(fr)
    if m:
        return "", m.group(1), m.group(2)
    first, _, rest = fr.partition(" ")
    if rest and first in _PRE_ADJECTIVES and " " not in rest:
        return first, rest, ""
    return "", fr, ""


def french_gender(fr: str, french: dict[str, str]) -> str | None:
    """The gender of a French noun the realiser knows, or of a compound's head noun."""
    _, head, _ = split_french(fr)
    if head != fr and (not _WORD.match(head) or head == "être"):
        return None
    return french.get(pyrealb_form(head))


def _is_cognate_first(n: Noun, fr_en: dict[str, list[str]], near: int = 4) -> bool:
    """Whether fra-eng's first sense of the noun's French word is that word itself and this noun
    is not among its first ``near`` senses ("centre": centre, core, nucleus, kernel, then pit).
    fra-eng often writes the cognate first and the usual word next ("bureau": bureau, office;
    "café": café, coffee-house, coffee), which stay."""
    senses = [e.casefold() for e in fr_en.get(n.fr, ())]
    return bool(senses) and senses[0] == n.fr.casefold() and n.en.casefold() not in senses[:near]


@dataclass
class _Sources:
    """What the lexicon is built from: WordNet, FreeDict's two dictionaries, pyrealb's lexicons
    (and its French nouns' genders), the CLDR emoji names' pairs and the Apertium pivots."""

    wn: WordNet
    en_fr: dict[str, list[str]]
    fr_en: dict[str, list[str]]
    lex_en: dict
    lex_fr: dict
    french: dict[str, str]  # French noun -> gender ("m", "f")
    emoji_pairs: set[tuple[str, str]]
    pivots: dict[str, dict[str, set[str]]]


def _english_nouns(wn: WordNet, en_fr: dict[str, list[str]], lex_en: dict) -> list[str]:
    """English nouns of a category: FreeDict's and the common ones pyrealb knows, and two-word
    nouns whose head the realiser knows and whose two words are common; none offensive."""
    from wordfreq import zipf_frequency

    english = [en for en in set(en_fr) | {w for w in lex_en if zipf_frequency(w, "en") >= MIN_ZIPF}
               if _WORD.match(en) and "N" in lex_en.get(en, {}) and wn.category(en) is not None
               and not wn.offensive(en) and not is_offensive(en, "en")]  # fmt: skip
    english += [en for en in wn.compounds()
                if "N" in lex_en.get(en.split()[1], {}) and all(zipf_frequency(w, "en") >= COMPOUND_MIN_ZIPF for w in en.split())
                and zipf_frequency(en, "en") >= MIN_ZIPF + 1 and wn.category(en) is not None and not is_offensive(en, "en")]  # fmt: skip
    return english


def _sources(root: Path, pivots: dict[str, dict[str, set[str]]] | None) -> tuple[_Sources, list[str]]:
    """The sources under ``root`` and the English nouns to translate (``pivots`` triangulated when not given)."""
    wn = WordNet(next(root.glob("**/usr/share/wordnet")))
    en_fr, fr_en = _dictionary(root, "eng-fra"), _dictionary(root, "fra-eng")
    lex_en, lex_fr = lexicons()
    emoji_en, emoji_fr = cldr_emoji(root, "en"), cldr_emoji(root, "fr")
    emoji_pairs = {(e, f) for cp in emoji_en for e in emoji_en[cp] for f in emoji_fr.get(cp, ())}
    english = _english_nouns(wn, en_fr, lex_en)
    french = {f: ("f" if e["N"].get("g") == "f" else "m") for f, e in lex_fr.items()
              if _WORD.match(f) and "N" in e and e["N"].get("g") in ("m", "f", "x")}  # fmt: skip
    if pivots is None:
        pivots = triangulate(root, english, french, known=lambda f: french_gender(f, french) is not None)
    return _Sources(wn, en_fr, fr_en, lex_en, lex_fr, french, emoji_pairs, pivots), english


Candidate = tuple[tuple, str, str, bool, int]  # (sort key, French, gender, confirmed, independent sources)


def _ranked(en: str, cands: list[str], src: _Sources) -> list[Candidate]:
    """The French candidates of ``en`` that have a gender and are not offensive, best first."""
    from wordfreq import zipf_frequency

    ranked = []
    for k, fr in enumerate(cands):
        g = french_gender(fr, src.french)
        if g is None or is_offensive(fr, "fr"):
            continue
        n_piv = len(src.pivots.get(en, {}).get(fr, ()))
        # FreeDict's two dictionaries count as two sources when both give the pair
        n_fd = (fr in src.en_fr.get(en, ())) + (en in src.fr_en.get(fr, ()))
        confirmed = n_fd == 2 or (en, fr) in src.emoji_pairs or n_piv >= 2 or (n_piv == 1 and n_fd > 0)
        # an English noun no FreeDict entry holds ("kitten", "lunch"): one pivot is enough
        confirmed = confirmed or (n_piv == 1 and en not in src.en_fr and not any(en in src.fr_en.get(f, ()) for f in src.pivots.get(en, {})))
        # confirmed first, then the most independent sources (FreeDict's two dictionaries, the
        # Esperanto pivot, and Spanish or Catalan counted once: the two share their false
        # friends, "coat" -> "abrigo"/"abric" -> "abri"), then the most common French word,
        # then the order
        vias = src.pivots.get(en, {}).get(fr, set())
        n_src = n_fd + ("eo" in vias) + bool(vias & {"es", "ca"})
        ranked.append(((not confirmed, -n_src, " " in fr, -zipf_frequency(fr, "fr"), k), fr, g, confirmed, n_src))
    ranked.sort()
    return ranked


def _alternatives(noun: Noun, ranked: list[Candidate], cands: list[str], first_sense_of: dict[str, list[str]], src: _Sources) -> list[Noun]:
    """Other French words for ``noun``, learnt French -> English only."""
    from wordfreq import zipf_frequency

    en, category, rank, countable = noun.en, noun.category, noun.rank, noun.countable
    out: list[Noun] = []
    # French -> English must know the other common word for the same thing (bicyclette beside
    # vélo, casquette beside bonnet): a second candidate that two sources confirm, less
    # often, and learnt French -> English only (English -> French keeps to the first word)
    for _, alt, alt_g, alt_confirmed, alt_src in ranked[1:2]:
        # ... and whose own first sense, French -> English, is this noun (casquette -> cap, orage ->
        # storm; not étape -> stadium or gosse -> girl)
        first_sense = src.fr_en.get(alt, [""])[0].casefold() == en.casefold()
        if alt_confirmed and first_sense and alt_src >= ALTERNATIVE_SOURCES and zipf_frequency(alt, "fr") >= ALTERNATIVE_MIN_ZIPF:
            out.append(Noun(en, alt, alt_g, category, True, rank + ALTERNATIVE_RANK, countable, alt_src, True, "fr-en"))
    # ... and a common French word whose first sense, French -> English, is this noun though no
    # source gives it English -> French ("grange" -> barn, "carnet" -> notebook)
    # (nouns only, both sides: not vrai -> right, boire -> drink, bref -> short)
    # and things only (not persons, time or the fallback categories: serviteur -> boy, plate-forme -> bed)
    back_words = sorted((-zipf_frequency(f, "fr"), f, f_g) for f in first_sense_of.get(en.casefold(), ())
                        if category in BACK_WORD_CATEGORIES and f not in cands and not is_offensive(f, "fr") and set(src.lex_fr.get(pyrealb_form(f), {})) == {"N"}
                        and not set(src.lex_en.get(en.split()[-1], {})) & {"A", "Adv", "P"} and (f_g := french_gender(f, src.french)) is not None)  # fmt: skip
    for z, alt, alt_g in back_words[:1]:
        if -z >= ALTERNATIVE_MIN_ZIPF and alt not in {a.fr for a in out}:
            out.append(Noun(en, alt, alt_g, category, True, rank + ALTERNATIVE_RANK, countable, 1, True, "fr-en"))
    return out


def _first_senses(nouns: list[Noun], src: _Sources) -> dict[tuple[str, str], Noun]:
    """French -> English: a noun's French word whose first sense in FreeDict's fra-eng is another,
    more common noun of the lexicon, of the same category, that eng-fra translates by it too
    ("médecin", physician's word, first "doctor", whose own word is "docteur"; "poule": fowl,
    first "chicken"; "orage": thunderstorm, first "storm"), when the French word is a noun and
    nothing else (not "reporter" -> transport, "boucher" -> block), is learnt into that noun
    too, French -> English only; per_french_word puts the more common first."""
    by_en = {n.en: n for n in nouns}
    first_senses = {}
    for n in nouns:
        first = by_en.get(next(iter(src.fr_en.get(n.fr, ())), "").casefold())
        if (first and first.en != n.en and first.fr != n.fr and first.rank < n.rank and n.fr in src.en_fr.get(first.en, ())
                and first.category == n.category and set(src.lex_fr.get(pyrealb_form(n.fr), {})) == {"N"}):  # fmt: skip
            first_senses[first.en, n.fr] = Noun(first.en, n.fr, n.gender, first.category, True, first.rank + ALTERNATIVE_RANK,
                                                first.countable, 1, True, "fr-en")  # fmt: skip
    return first_senses


def build_lexicon(root: Path, pivots: dict[str, dict[str, set[str]]] | None = None) -> list[Noun]:
    """Daily-life nouns: English nouns of a CATEGORIES category whose French translation pyrealb
    knows with a gender, the best candidate of each (confirmed, then given by the most sources,
    then common), most common first.  ``pivots`` (``apertium.triangulate``'s result) is looked up
    under ``root`` when not given."""
    from wordfreq import zipf_frequency

    src, english = _sources(root, pivots)
    nouns: list[Noun] = []
    alternatives: list[Noun] = []
    # French words whose first sense in FreeDict's fra-eng is an English noun ("grange" -> barn,
    # where eng-fra gives "kiosque"): second words for that noun (_alternatives)
    first_sense_of: dict[str, list[str]] = defaultdict(list)
    for f, es in src.fr_en.items():
        if es:
            first_sense_of[es[0].casefold()].append(f)
    for en in sorted(english):
        cands = [f.replace("\u2010", "-") for f in src.en_fr.get(en, [])]
        cands += [f for f in src.pivots.get(en, {}) if f not in cands]
        ranked = _ranked(en, cands, src)
        if not ranked:
            continue
        _, fr, g, confirmed, n_src = ranked[0]
        rank = round(10 * (7 - zipf_frequency(en, "en"))) + (COMPOUND_RANK if " " in en else 0)
        countable = src.lex_en[en.split()[-1]]["N"].get("cnt", "yes") != "no"
        category = src.wn.category(en)
        assert category is not None  # (the English nouns all have one)
        noun = Noun(en, fr, g, category, confirmed, rank, countable, n_src, en in src.fr_en.get(fr, ()))
        nouns.append(noun)
        alternatives += _alternatives(noun, ranked, cands, first_sense_of, src)
        # people: the feminine too where French has one (cousin -> la cousine, voisin -> la voisine)
        if noun.category in ("family", "person") and src.lex_fr.get(pyrealb_form(split_french(fr)[1]), {}).get("N", {}).get("g") == "x":
            nouns.append(replace(noun, gender="f"))
    first_senses = _first_senses(nouns, src)
    # French -> English keeps a French word that fra-eng gives first as the same English word
    # ("centre" -> centre, a noun of no category here) rather than learn it as a lexicon noun that
    # fra-eng gives far down or not at all ("pit" -> "centre", "bride" -> "fiancé"): that pair is
    # learnt English -> French only
    nouns = [replace(n, direction="en-fr") if n.direction == "both" and _is_cognate_first(n, src.fr_en) else n for n in nouns]
    # not another noun's own word (grandmother -> grand-père, table -> liste, tool -> produit)
    primary = {pyrealb_form(n.fr.lower()) for n in nouns}
    nouns += [n for n in alternatives if pyrealb_form(n.fr.lower()) not in primary and (n.en, n.fr) not in first_senses]
    nouns += first_senses.values()
    nouns.sort(key=lambda n: (n.rank, n.en))
    return nouns
