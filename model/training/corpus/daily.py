"""Sentences of daily life in English and French, realised from one sentence plan per pair.

The words come from the daily-life lexicon (``lexicon.build_lexicon``: FreeDict, WordNet, CLDR,
pyrealb); the grammar from **pyrealb** (Lapalme's bilingual realiser: agreement, conjugation,
elision and contraction in both languages), so a lexicon entry is seen in many grammatical
sentences: several tenses, persons, numbers, negations and questions.

A *frame* below is one sentence plan written twice, once with English and once with French
lexical items; the slots are filled from the lexicon by category ("family", "food", ...).  The
frames' own verbs, adjectives and time expressions are pairs FreeDict gives as well; the week
days and months come from CLDR.

``generate(nouns, n, seed)`` yields ``n`` distinct (English, French) pairs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, NamedTuple

import pyrealb as R

from rendition.model.training.corpus.lexicon import Noun, pyrealb_form, split_french

CONCRETE = ("animal", "food", "clothing", "furniture", "object", "thing", "vehicle", "plant")
# (English, French) verb pairs by the kind of object they take
VERBS = {
    "any": [("see", "voir"), ("find", "trouver"), ("look", "regarder"), ("want", "vouloir"), ("have", "avoir"), ("need", "avoir besoin"), ("like", "aimer"), ("lose", "perdre"), ("take", "prendre"), ("bring", "apporter"), ("show", "montrer"), ("draw", "dessiner")],
    "object": [("buy", "acheter"), ("sell", "vendre"), ("clean", "nettoyer"), ("break", "casser"), ("open", "ouvrir"), ("carry", "porter"), ("forget", "oublier"), ("keep", "garder"), ("repair", "réparer")],
    "food": [("eat", "manger"), ("buy", "acheter"), ("cook", "cuisiner"), ("prepare", "préparer"), ("like", "aimer"), ("want", "vouloir"), ("cut", "couper"), ("taste", "goûter")],
    "clothing": [("wear", "porter"), ("buy", "acheter"), ("wash", "laver"), ("find", "trouver"), ("lose", "perdre"), ("like", "aimer")],
    "person": [("call", "appeler"), ("help", "aider"), ("visit", "visiter"), ("meet", "rencontrer"), ("love", "aimer"), ("wait", "attendre"), ("see", "voir")],
    "body": [("wash", "laver"), ("brush", "brosser"), ("touch", "toucher"), ("raise", "lever"), ("hide", "cacher"), ("show", "montrer"), ("dry", "sécher"), ("cover", "couvrir")],
}
ADJECTIVES = [("big", "grand"), ("small", "petit"), ("new", "nouveau"), ("old", "vieux"), ("red", "rouge"), ("blue", "bleu"), ("green", "vert"), ("white", "blanc"), ("black", "noir"), ("yellow", "jaune"), ("grey", "gris"), ("brown", "brun"), ("pink", "rose"), ("pretty", "joli"), ("clean", "propre"), ("dirty", "sale"), ("heavy", "lourd"), ("expensive", "cher"), ("beautiful", "beau"), ("good", "bon"), ("long", "long"), ("short", "court"), ("warm", "chaud"), ("cold", "froid"), ("empty", "vide"), ("full", "plein"), ("wet", "mouillé"), ("dry", "sec"), ("young", "jeune"), ("tired", "fatigué"), ("happy", "heureux"), ("sad", "triste"), ("sick", "malade"), ("strong", "fort")]
# (English, French) verbs without an object: what people and animals do
# a family subject's adjective: "my little brother" / "mon petit frère", "her big sister" / "sa grande sœur"
FAMILY_ADJECTIVES = [("little", "petit"), ("big", "grand")]
FAMILY_ADJECTIVE_P = 0.15
FRONT_P = 0.2  # statements with their time expression first: "Hier, elle a dormi."
ACTIVITIES = [("sleep", "dormir"), ("cry", "pleurer"), ("swim", "nager"), ("run", "courir"), ("walk", "marcher"), ("dance", "danser"), ("sing", "chanter"), ("laugh", "rire"), ("read", "lire"), ("cook", "cuisiner"), ("work", "travailler"), ("play", "jouer"), ("eat", "manger"), ("drink", "boire"), ("smile", "sourire"), ("jump", "sauter"), ("wait", "attendre"), ("write", "écrire"), ("study", "étudier"), ("travel", "voyager"), ("shout", "crier"), ("fall", "tomber"), ("arrive", "arriver"), ("leave", "partir"), ("come", "venir"), ("stay", "rester"), ("rest", "reposer"), ("win", "gagner"), ("lose", "perdre"), ("listen", "écouter"), ("draw", "dessiner"), ("paint", "peindre"), ("fish", "pêcher"), ("ski", "skier")]
# (English verb, English object, French verb, French object or "")
MEALS = [("have", "breakfast", "prendre", "le petit déjeuner"), ("have", "lunch", "déjeuner", ""), ("have", "dinner", "dîner", ""), ("have", "a snack", "goûter", "")]
# events and illnesses (pairs FreeDict gives): "the party is on Friday", "she has a cold"
EVENTS = [Noun("party", "fête", "f", "event", True, 20), Noun("birthday", "anniversaire", "m", "event", True, 27), Noun("concert", "concert", "m", "event", True, 30),
          Noun("meeting", "réunion", "f", "event", True, 24), Noun("lesson", "leçon", "f", "event", True, 32), Noun("trip", "voyage", "m", "event", True, 27),
          Noun("visit", "visite", "f", "event", True, 25), Noun("wedding", "mariage", "m", "event", True, 22), Noun("picnic", "pique-nique", "m", "event", True, 32),
          Noun("match", "match", "m", "event", True, 19), Noun("exam", "examen", "m", "event", True, 27), Noun("show", "spectacle", "m", "event", True, 13),
          Noun("appointment", "rendez-vous", "m", "event", True, 25), Noun("festival", "festival", "m", "event", True, 23),
          Noun("funeral", "enterrement", "m", "event", True, 26)]  # fmt: skip
HAVE_EVENTS = ("party", "meeting", "lesson", "visit", "exam", "appointment")  # "I have an exam tomorrow"
ILLNESSES = [("a cold", "un rhume"), ("the flu", "la grippe"), ("a fever", "de la fièvre")]
# games and instruments: "play football" / "jouer au football", "play the piano" / "jouer du piano"
SPORTS = [("football", "football", "m"), ("tennis", "tennis", "m"), ("rugby", "rugby", "m"), ("golf", "golf", "m"), ("hockey", "hockey", "m")]
INSTRUMENTS = [("piano", "piano", "m"), ("guitar", "guitare", "f"), ("violin", "violon", "m"), ("flute", "flûte", "f")]
# requests: where English puts "please" (last, first, nowhere), relative weights by the kind of request
PLEASE_WEIGHTS = {"imperative": (4, 2, 3), "go": (4, 1, 1), "wish": (6, 0, 2), "thing": (1, 0, 0)}
# requests: (English, French) verbs for the imperative, by the kind of object they take
REQUESTS = {
    "object": [("buy", "acheter"), ("clean", "nettoyer"), ("open", "ouvrir"), ("close", "fermer"), ("bring", "apporter"), ("take", "prendre"), ("carry", "porter"), ("show", "montrer"), ("find", "trouver"), ("forget", "oublier"), ("repair", "réparer")],
    "food": [("buy", "acheter"), ("eat", "manger"), ("cook", "cuisiner"), ("cut", "couper"), ("bring", "apporter"), ("taste", "goûter"), ("take", "prendre"), ("forget", "oublier")],
    "clothing": [("wear", "porter"), ("wash", "laver"), ("buy", "acheter"), ("take", "prendre"), ("forget", "oublier")],
    "person": [("call", "appeler"), ("help", "aider"), ("wait for", "attendre"), ("visit", "visiter")],
}
SEASONS = [("summer", "en été"), ("winter", "en hiver"), ("autumn", "en automne"), ("spring", "au printemps")]
# "il fait X": the French adjective is written as it is ("il fait beau" stays "beau" before a vowel, not "bel")
WEATHER = [("hot", "chaud"), ("cold", "froid"), ("warm", "bon"), ("nice", "beau")]
WHEN = {  # (English, French, tense)
    "past": [("yesterday", "hier"), ("last week", "la semaine dernière"), ("this morning", "ce matin"), ("last night", "hier soir")],
    "future": [("tomorrow", "demain"), ("next week", "la semaine prochaine"), ("tonight", "ce soir"), ("tomorrow morning", "demain matin")],
    "present": [("every day", "tous les jours"), ("today", "aujourd'hui"), ("in the morning", "le matin"), ("in the evening", "le soir"), ("now", "maintenant")],
}
DAY_PARTS = [("in the morning", "le matin"), ("in the afternoon", "l'après-midi"), ("in the evening", "le soir"), ("at night", "la nuit"), ("at noon", "à midi"),
             ("at breakfast", "au petit déjeuner"), ("at lunch", "au déjeuner"), ("at dinner", "au dîner")]
DAY_PART_AFTER = [("morning", "matin"), ("afternoon", "après-midi"), ("evening", "soir")]  # "on Friday evening" / "vendredi soir"
WEATHER_NOUNS = [("sun", "soleil", "shine", "briller"), ("wind", "vent", "blow", "souffler"), ("snow", "neige", "fall", "tomber"), ("rain", "pluie", "fall", "tomber")]
PREPOSITIONS = [("under", "sous"), ("on", "sur"), ("in", "dans"), ("behind", "derrière"), ("near", "près de"), ("next to", "à côté de"), ("in front of", "devant")]
WEIGHT_POWER = 0.25
TENSES = {"present": ("p", "p"), "past": ("ps", "pc"), "future": ("f", "f")}
_VOWEL = re.compile(r"^[aeiouyhàâéèêëîïôûœ]", re.I)


@dataclass(frozen=True)
class Subject:
    person: int  # 1, 2, 3
    number: str  # "s" or "p"
    gender: str  # "m" or "f"
    noun: Noun | None = None  # a noun subject (with a possessive of `owner`), else a pronoun
    owner: int = 1
    det: str = "poss"  # "poss" or "the"
    adj: tuple[str, str] | None = None  # "my little brother" / "mon petit frère"


# nouns pyrealb's English lexicon inflects as regular ("fishes") whose everyday plural is the singular
ZERO_PLURAL_EN = ("fish", "cod")


def _load_english() -> None:
    R.loadEn()
    lex = R.getLexicon()
    R.updateLexicon({w: {**lex[w], "N": {**lex[w]["N"], "tab": "n4"}} for w in ZERO_PLURAL_EN})


class Realiser:
    """pyrealb with the language switched as needed and its warnings turned into None."""

    def __init__(self) -> None:
        self.lang = ""

    def __call__(self, lang: str, build: Callable[[], Any]) -> str | None:
        if lang != self.lang:
            (_load_english if lang == "en" else R.loadFr)()
            self.lang = lang
        try:
            text = build().realize().strip()
        except Exception:  # noqa: BLE001 - pyrealb raises on plans it cannot realise
            return None
        if "[[" in text or not text:
            return None
        return _french_typography(text) if lang == "fr" else text


def _french_typography(text: str) -> str:
    text = re.sub(r"\s*([?!:;])$", r" \1", text)
    text = re.sub(r"\bpas (des|un|une) (?=[^aeiouyhàâéèêœ])", "pas de ", text)
    text = re.sub(r"\bpas (des|un|une) ", "pas d'", text)
    return re.sub(r"\b([sS])oeur|\b([oO])euf|\b([cC])oeur|\b([bB])oeuf|\b([oO])eil|\b([nN])oeud|\b([vV])oeu|\b([oO])euvre", lambda m: m.group(0).replace("oe", "œ").replace("Oe", "Œ"), text)


def _n(lang: str, noun: Noun, number: str = "s") -> tuple:
    """The noun's words: the head noun inflected, a compound's other words as they are ("post
    office", "salle de bain", "petit déjeuner")."""
    if lang == "en":
        *mods, head = noun.en.split()
        return (*(R.Q(m) for m in mods), R.N(head).n(number))
    before, head, after = split_french(noun.fr)
    n = R.N(pyrealb_form(head)).g(noun.gender).n(number)
    return (*([R.A(before).pos("pre")] if before else []), n, *([R.Q(after)] if after else []))


def np(lang: str, noun: Noun, det: str, number: str = "s", owner: int = 1, owner_number: str = "s", adj: tuple[str, str] | None = None, owner_gender: str = "m"):
    """A noun phrase: det is "the", "a", "this", "poss" (a possessive of owner), "some" or "none".
    An uncountable noun ("water", "bread") stays singular and takes "the" for "a"."""
    if not noun.countable:
        number, det = "s", ("the" if det == "a" else det)
    n = _n(lang, noun, number)
    if adj and adj[0] == "small" and noun.category == "family":
        adj = ("little", adj[1])  # "my little brother", not "my small brother"
    a = [R.A(adj[0] if lang == "en" else adj[1])] if adj else []
    if det == "some":  # partitive / indefinite plural
        if lang == "en":
            return R.NP(R.Q("some"), *a, *n) if number == "s" else R.NP(*a, *n)
        if number == "p":
            return R.NP(R.D("un").n("p"), *n, *a)
        if _VOWEL.match(noun.fr):
            return R.Q("de l'" + noun.fr)
        return R.NP(R.Q("du" if noun.gender == "m" else "de la"), *n, *a)
    if det == "none":
        return R.NP(*a, *n) if lang == "en" else R.NP(*n, *a)
    dets = {"the": ("the", "le"), "a": ("a", "un"), "this": ("this", "ce"), "poss": ("my", "mon")}
    d = R.D(dets[det][0 if lang == "en" else 1])
    if det == "poss" and lang == "en":
        d = d.pe(owner).ow(owner_number).g(owner_gender)
    elif det == "poss" and owner_number == "p":  # notre/nos, votre/vos, leur/leurs
        d = R.Q({1: ("notre", "nos"), 2: ("votre", "vos"), 3: ("leur", "leurs")}[owner][number == "p"])
    elif det == "poss":
        d = d.pe(owner)
    if det == "a" and number == "p" and lang == "en":
        return R.NP(*a, *n)
    return R.NP(d, *a, *n) if lang == "en" else R.NP(d, *n, *a)


class When(NamedTuple):
    """A time expression in both languages, and whether a statement puts it first."""

    en: str
    fr: str
    front: bool = False


def clause(lang: str, parts: list, tense: str, when: When | None, typ: dict, prog: bool = False):
    """A sentence of ``parts`` with the time expression ``when`` at its end (at its front, with a
    comma, where ``when.front`` and the sentence is no question), in ``tense``, of type ``typ``
    (negation, question), and in the English progressive where ``prog``."""
    i = 0 if lang == "en" else 1
    if when and when.front and "int" not in typ:
        sent = R.S(R.Q((when.en, when.fr)[i] + ","), *parts).t(TENSES[tense][i])
    else:
        sent = R.S(*parts, *([R.Q((when.en, when.fr)[i])] if when else [])).t(TENSES[tense][i])
    t = {**typ, **({"prog": True} if prog and lang == "en" else {})}
    return sent.typ(t) if t else sent


def possessor(s: Subject) -> dict:
    """np()'s owner arguments for "the subject's own X": a pronoun subject owns it ("I wash my
    hands"), a noun subject in the third person singular ("my aunt washes her hands")."""
    return dict(owner=s.person if s.noun is None else 3, owner_number=s.number if s.noun is None else "s", owner_gender=s.gender)


def subject(lang: str, s: Subject):
    if s.noun is None:
        pro = R.Pro("I" if lang == "en" else "je").pe(s.person).n(s.number)
        return pro.g(s.gender)
    return np(lang, s.noun, s.det, s.number, owner=s.owner, owner_gender=s.gender, adj=s.adj)


class Generator:
    def __init__(self, nouns: Sequence[Noun], days: Sequence[tuple[str, str]], months: Sequence[tuple[str, str]], rng: random.Random) -> None:
        self.rng = rng
        self.days, self.months = list(days), list(months)
        self.by_cat: dict[str, list[Noun]] = {}
        for n in nouns:
            self.by_cat.setdefault(n.category, []).append(n)
        # common words more often, the rarer ones still many times: weight 1 / (1 + position in
        # the rank order) ** 0.25
        self.weights = {c: [1.0 / (1 + i) ** WEIGHT_POWER for i in range(len(ns))] for c, ns in self.by_cat.items()}
        self.realise = Realiser()
        self.directions: set[str] = set()  # of the nouns the sentence being made uses
        self.direction = "both"  # the direction the last sentence trains (one-way nouns make it one-way)

    def noun(self, *cats: str) -> Noun:
        cat = self.rng.choice([c for c in cats if c in self.by_cat])
        noun = self.rng.choices(self.by_cat[cat], self.weights[cat])[0]
        self.directions.add(noun.direction)
        return noun

    def subj(self, people: bool = True) -> Subject:
        r = self.rng
        if people and r.random() < 0.45:
            noun = self.noun("family", "family", "person")
            number = "p" if r.random() < 0.2 else "s"
            adj = r.choice(FAMILY_ADJECTIVES) if noun.category == "family" and r.random() < FAMILY_ADJECTIVE_P else None
            return Subject(3, number, noun.gender, noun, owner=r.choice([1, 1, 2, 3]), det=r.choice(["poss", "poss", "the"]), adj=adj)
        return Subject(r.choice([1, 1, 2, 3]), "p" if r.random() < 0.3 else "s", r.choice("mf"))

    def when(self, tense: str, p: float = 0.5) -> When | None:
        """A time expression that fits the tense (``words``), at the front of the sentence
        ``FRONT_P`` of the time ("Hier, elle a dormi." / "Yesterday, she slept.")."""
        words = self.when_words(tense, p)
        return When(*words, front=self.rng.random() < FRONT_P) if words else None

    def when_words(self, tense: str, p: float = 0.5) -> tuple[str, str] | None:
        """A time expression that fits the tense: a relative day, a week day (with a part of the day
        or not: "on Friday evening" / "vendredi soir", "on Monday mornings" / "le lundi matin"), a
        month, a season, a part of the day or a clock hour (pyrealb spells the numbers in both
        languages)."""
        r = self.rng
        if r.random() >= p:
            return None
        kind = r.choice(["rel", "rel", "day", "day", "month", "season", "part", "hour"])
        if kind == "rel":
            return r.choice(WHEN[tense])
        if kind == "day":  # (with a part of the day after it, a third of the time)
            en, fr = r.choice(self.days)
            if r.random() < 1 / 3:
                part_en, part_fr = r.choice(DAY_PART_AFTER)
                en, fr = f"{en} {part_en}", f"{fr} {part_fr}"
            return (f"on {en}s", f"le {fr}") if tense == "present" else (f"on {en}", fr)
        if kind == "month":
            en, fr = r.choice(self.months)
            return f"in {en}", f"en {fr}"
        if kind == "season":
            en, fr = r.choice(SEASONS)
            return f"in {en}", fr
        if kind == "part":
            return r.choice(DAY_PARTS)
        h = r.randint(2, 11)
        h_en = self.realise("en", lambda: R.NO(h).dOpt({"nat": True}))
        h_fr = self.realise("fr", lambda: R.NO(h).dOpt({"nat": True}))
        return (f"at {h_en} o'clock", f"à {h_fr} heures") if h_en and h_fr else None

    def pair(self, build: Callable[[str], object]) -> tuple[str, str] | None:
        en = self.realise("en", lambda: build("en"))
        fr = self.realise("fr", lambda: build("fr"))
        return (en, fr) if en and fr else None

    # ---- frames: each returns a build(lang) function ---------------------------------------
    def f_verb_object(self):
        r = self.rng
        kind = r.choice(list(VERBS))
        v_en, v_fr = r.choice(VERBS[kind])
        cats = {"any": CONCRETE, "object": ("object", "thing", "furniture", "vehicle"), "food": ("food",), "clothing": ("clothing",), "person": ("family", "person", "animal"), "body": ("body",)}[kind]
        obj = self.noun(*cats)
        s = self.subj()
        tense = r.choice(list(TENSES))
        # one's own hands, teeth, hair: a possessive of the subject
        det = "poss" if kind == "body" else r.choice(["the", "a", "poss", "this"] + (["some"] if kind == "food" else []))
        num = "p" if r.random() < 0.3 else "s"
        adj = r.choice(ADJECTIVES) if r.random() < 0.25 else None
        when = self.when(tense)
        typ = r.choice([{}, {}, {}, {"neg": True}] + ([{"int": "yon"}] if v_en != "have" else []))  # no "Have you a ...?"
        prog = tense == "present" and kind == "clothing" and r.random() < 0.5

        def build(lang: str):
            verb = v_en if lang == "en" else v_fr
            o = np(lang, obj, det, num, adj=adj, **possessor(s))
            if lang == "fr" and verb == "avoir besoin":
                vp = R.VP(R.V("avoir"), R.N("besoin"), R.PP(R.P("de"), o))
            elif lang == "en" and verb in ("look", "wait"):
                vp = R.VP(R.V(verb), R.PP(R.P("at" if verb == "look" else "for"), o))
            else:
                vp = R.VP(R.V(verb), o)
            return clause(lang, [subject(lang, s), vp], tense, when, typ, prog)

        return build

    def f_location(self):
        r = self.rng
        thing = self.noun("animal", "object", "thing", "food", "clothing", "family")
        where = self.noun("furniture", "furniture", "place", "place", "outdoors", "vehicle")
        prep = r.choice(PREPOSITIONS)
        verb = r.choice([("be", "être"), ("sleep", "dormir"), ("sit", "attendre"), ("play", "jouer")] if thing.category in ("animal", "family") else [("be", "être")])
        tense = r.choice(list(TENSES))
        num = "p" if r.random() < 0.25 else "s"
        det = r.choice(["the", "poss", "the"])
        typ = r.choice([{}, {}, {"neg": True}, {"int": "yon"}])

        def build(lang: str):
            i = 0 if lang == "en" else 1
            subj = np(lang, thing, det, num, owner=r_owner, owner_gender=r_gender)
            place = np(lang, where, "the")
            pp = R.PP(R.P(prep[i]), place) if " " not in prep[i] else R.PP(R.Q(prep[i].rsplit(" ", 1)[0]), R.P(prep[i].rsplit(" ", 1)[1]), place)
            vp = R.VP(R.V(verb[i]), pp)
            t = "i" if lang == "fr" and tense == "past" and verb[0] == "be" else TENSES[tense][i]
            sent = R.S(subj, vp).t(t)
            return sent.typ(typ) if typ else sent

        r_owner, r_gender = r.choice([1, 2, 3]), r.choice("mf")
        return build

    def f_work_go(self):
        r = self.rng
        s = self.subj()
        place = self.noun("place", "place", "outdoors")
        kind = r.choice(["go", "work", "live"])
        day = r.choice(self.days) if r.random() < 0.5 else None
        habitual = day is not None and r.random() < 0.5
        tense = "present" if habitual else r.choice(list(TENSES))
        typ = r.choice([{}, {}, {"neg": True}, {"int": "yon"}])

        def build(lang: str):
            i = 0 if lang == "en" else 1
            verb = {"go": ("go", "aller"), "work": ("work", "travailler"), "live": ("live", "habiter")}[kind][i]
            prep = {"go": ("to", "à"), "work": ("in", "dans"), "live": ("near", "près de")}[kind][i]
            obj = np(lang, place, "a" if kind == "work" else "the")
            pp = R.PP(R.P(prep), obj) if " " not in prep else R.PP(R.Q("près"), R.P("de"), obj)
            parts = [subject(lang, s), R.VP(R.V(verb), pp)]
            if day:
                if lang == "en":
                    parts.append(R.Q(f"on {day[0]}s" if habitual else f"on {day[0]}"))
                else:
                    parts.append(R.Q(f"le {day[1]}" if habitual else day[1]))
            sent = R.S(*parts).t(TENSES[tense][i])
            return sent.typ(typ) if typ else sent

        return build

    def f_describe(self):
        r = self.rng
        thing = self.noun(*CONCRETE, "place", "family", "body")
        adj = r.choice(ADJECTIVES)
        det = r.choice(["the", "poss", "this"])
        num = "p" if r.random() < 0.3 else "s"
        owner, gender = r.choice([1, 2, 3]), r.choice("mf")
        tense = r.choice(["present", "present", "past"])
        typ = r.choice([{}, {}, {"neg": True}, {"int": "yon"}])
        very = r.random() < 0.2

        def build(lang: str):
            i = 0 if lang == "en" else 1
            a = R.A(adj[i])
            ap = R.AP(R.Adv("very" if lang == "en" else "très"), a) if very else a
            t = "i" if lang == "fr" and tense == "past" else TENSES[tense][i]  # a past state: imparfait
            sent = R.S(np(lang, thing, det, num, owner=owner, owner_gender=gender), R.VP(R.V("be" if lang == "en" else "être"), ap)).t(t)
            return sent.typ(typ) if typ else sent

        return build

    def f_hurts(self):
        r = self.rng
        part = self.noun("body")
        person = r.choice([1, 2, 3])
        num = r.choice("ss" + "p")
        parts_num = "p" if r.random() < 0.3 else "s"
        g = r.choice("mf")
        tense = r.choice(["present", "present", "past"])

        def build(lang: str):
            if lang == "en":
                return R.S(np("en", part, "poss", parts_num, owner=person, owner_number=num, owner_gender=g), R.VP(R.V("hurt"))).t(TENSES[tense][0])
            return R.S(R.Pro("je").pe(person).n(num).g(g), R.VP(R.V("avoir"), R.N("mal"), R.PP(R.P("à"), np("fr", part, "the", parts_num)))).t(TENSES[tense][1])

        return build

    def f_weather(self):
        r = self.rng
        kind = r.choice(["season", "season", "rain", "rain", "day", "noun", "noun"])
        wn = r.choice(WEATHER_NOUNS)
        season = r.choice(SEASONS)
        month = r.choice(self.months)
        w = r.choice(WEATHER)
        day = r.choice(self.days)
        rain = r.choice([("rain", "pleuvoir"), ("snow", "neiger")])
        tense = r.choice(list(TENSES))
        r_often = r.random() < 0.4
        tw = self.when_words(tense, 0.6) if kind in ("rain", "noun", "day") else None
        weather = kind in ("season", "day") and r.random() < 0.3  # "The weather is nice today." / "Il fait beau aujourd'hui."

        def build(lang: str):
            i = 0 if lang == "en" else 1
            it = R.Pro("it") if lang == "en" else R.Pro("je").pe(3).g("m")
            if weather and lang == "en":
                it = R.NP(R.D("the"), R.N("weather"))
            if kind == "season":
                vp = R.VP(R.V("be"), R.A(w[0])) if lang == "en" else R.VP(R.V("faire"), R.Q(w[1]))
                at = R.Q(f"in {season[0]}") if lang == "en" else R.Q(season[1])
                return R.S(it, vp, at)
            if kind == "rain":
                if tense == "present" and r_often:
                    often = R.Adv("often" if lang == "en" else "souvent")
                    at = R.Q(f"in {month[0]}") if lang == "en" else R.Q(f"en {month[1]}")
                    return R.S(it, R.VP(R.V(rain[i]), often), at)
                sent = R.S(it, R.VP(R.V(rain[i])), *([R.Q(tw[i])] if tw else [])).t(TENSES[tense][i])
                return sent.typ({"prog": True}) if lang == "en" and tense == "present" else sent
            if kind == "noun":
                subj = R.NP(R.D("the" if lang == "en" else "le"), R.N(wn[i]))
                sent = R.S(subj, R.VP(R.V(wn[2 + i])), *([R.Q(tw[i])] if tw else [])).t(TENSES[tense][i])
                return sent.typ({"prog": True}) if lang == "en" and tense == "present" else sent
            at = R.Q(tw[i] if tw else (f"on {day[0]}", day[1])[i])
            vp = R.VP(R.V("be"), R.A(w[0])) if lang == "en" else R.VP(R.V("faire"), R.Q(w[1]))
            t = "i" if lang == "fr" and tense == "past" else TENSES[tense][i]
            return R.S(it, vp, at).t(t)

        return build

    def f_have(self):
        r = self.rng
        noun = self.noun("family", "family", "animal", "object", "clothing", "vehicle")
        k = r.choice([1, 2, 3, 4])
        s = self.subj(people=False)
        typ = r.choice([{}, {}, {"neg": True}])

        def build(lang: str):
            i = 0 if lang == "en" else 1
            num = "p" if k > 1 else "s"
            o = R.NP(R.NO(k).dOpt({"nat": True}), *_n(lang, noun, num)) if k > 1 else np(lang, noun, "a")
            sent = R.S(subject(lang, s), R.VP(R.V(("have", "avoir")[i]), o))
            return sent.typ(typ) if typ else sent

        return build

    def f_where(self):
        r = self.rng
        noun = self.noun(*CONCRETE, "place", "family")
        det = r.choice(["the", "poss"])
        owner = r.choice([1, 2])
        num = "p" if r.random() < 0.25 else "s"

        def build(lang: str):
            subj = np(lang, noun, det, num, owner=owner)
            if lang == "en":
                return R.S(subj, R.VP(R.V("be"))).typ({"int": "whe"})
            return R.S(subj, R.VP(R.V("être"))).typ({"int": "whe"})

        return build

    def f_activity(self):
        r = self.rng
        v = r.choice(ACTIVITIES)
        s = self.subj()
        if s.noun is None and r.random() < 0.2:
            a = self.noun("animal")
            s = Subject(3, "p" if r.random() < 0.3 else "s", a.gender, a, owner=r.choice([1, 3]), det=r.choice(["poss", "the"]))
        place = self.noun("place", "outdoors") if r.random() < 0.4 else None
        tense = r.choice(list(TENSES))
        when = self.when(tense)
        typ: dict[str, Any] = r.choice([{}, {}, {}, {"neg": True}, {"int": "yon"}])
        prog = tense == "present" and when is None and r.random() < 0.6

        def build(lang: str):
            i = 0 if lang == "en" else 1
            vp = R.VP(R.V(v[i]), *([R.PP(R.P(("in", "dans")[i]), np(lang, place, "the"))] if place else []))
            return clause(lang, [subject(lang, s), vp], tense, when, typ, prog)

        return build

    def f_play(self):
        r = self.rng
        sport = r.random() < 0.6
        en, fr, g = r.choice(SPORTS if sport else INSTRUMENTS)
        s = self.subj()
        tense = r.choice(list(TENSES))
        when = self.when(tense)
        typ: dict[str, Any] = r.choice([{}, {}, {}, {"neg": True}, {"int": "yon"}])
        prog = tense == "present" and when is None and r.random() < 0.4

        def build(lang: str):
            if lang == "en":
                vp = R.VP(R.V("play"), R.NP(R.N(en)) if sport else R.NP(R.D("the"), R.N(en)))
            else:  # jouer à (sports), jouer de (instruments): "au football", "de la guitare"
                vp = R.VP(R.V("jouer"), R.PP(R.P("à" if sport else "de"), R.NP(R.D("le"), R.N(fr).g(g))))
            return clause(lang, [subject(lang, s), vp], tense, when, typ, prog)

        return build

    def f_meal(self):
        r = self.rng
        en_v, en_o, fr_v, fr_o = r.choice(MEALS)
        s = self.subj()
        tense = r.choice(list(TENSES))
        when = self.when(tense, 0.7)
        place = self.noun("place") if r.random() < 0.25 else None
        typ = r.choice([{}, {}, {}, {"neg": True}])  # no "Had you breakfast?" (see f_event)

        def build(lang: str):
            i = 0 if lang == "en" else 1
            if lang == "en":
                obj = [R.Q(en_o)]
            else:
                obj = [R.NP(R.D("le"), R.A("petit").pos("pre"), R.N("déjeuner"))] if fr_o else []
            pp = [R.PP(R.P(("in", "dans")[i]), np(lang, place, "the"))] if place else []
            return clause(lang, [subject(lang, s), R.VP(R.V(en_v if lang == "en" else fr_v), *obj, *pp)], tense, when, typ)

        return build

    def f_event(self):
        r = self.rng
        kind = r.choice(["when", "when", "go", "have"])
        event = r.choice([e for e in EVENTS if kind != "have" or e.en in HAVE_EVENTS])
        tense = r.choice(["present", "future"]) if kind == "when" else r.choice(list(TENSES))
        when = self.when(tense, 1.0 if kind == "when" else 0.5)
        if when and kind == "when":  # the time is what "the party is on Friday" says: it stays last
            when = when._replace(front=False)
        s = self.subj()
        det = r.choice(["the", "poss"]) if kind != "have" else "a"
        # no questions with "have": pyrealb asks "Had you a meeting?" where English says "Did you have"
        typ = r.choice([{}, {}, {}] + ([{"int": "yon"}] if kind != "have" else []) + ([{"neg": True}] if kind == "go" else []))

        def build(lang: str):
            i = 0 if lang == "en" else 1
            if kind == "when":
                subj = np(lang, event, det, owner=r_owner, owner_gender=r_gender)
                return clause(lang, [subj, R.VP(R.V(("be", "être")[i]))], tense, when, typ)
            if kind == "go":
                vp = R.VP(R.V(("go", "aller")[i]), R.PP(R.P(("to", "à")[i]), np(lang, event, det, **possessor(s))))
            else:
                vp = R.VP(R.V(("have", "avoir")[i]), np(lang, event, "a"))
            return clause(lang, [subject(lang, s), vp], tense, when, typ)

        r_owner, r_gender = r.choice([1, 2, 3]), r.choice("mf")
        return build

    def f_illness(self):
        r = self.rng
        en, fr = r.choice(ILLNESSES)
        s = self.subj()
        tense = r.choice(["present", "present", "past"])
        when = self.when(tense, 0.4)
        typ = r.choice([{}, {}, {}, {"neg": True}]) if en != "a fever" else {}  # no "Had you ...?"; "pas de fièvre"

        def build(lang: str):
            vp = R.VP(R.V("have"), R.Q(en)) if lang == "en" else R.VP(R.V("avoir"), R.Q(fr))
            return clause(lang, [subject(lang, s), vp], tense, when, typ)

        return build

    def f_request(self):
        """Requests: to one person or several in the imperative ("Close the door, please." / "Ferme
        la porte, s'il te plaît." or "Fermez ..., s'il vous plaît."; "Please buy some apples." /
        "Achète des pommes, s'il te plaît."; "Do not forget your coat." / "N'oublie pas ton
        manteau."; "Go to the bakery." / "Va à la boulangerie."), a wish ("I would like some bread,
        please." / "Je voudrais du pain, s'il vous plaît.") or a bare thing ("A coffee, please." /
        "Un café, s'il vous plaît.").  English puts "please" last more often than first, as
        people do: French has it last either way."""
        r = self.rng
        kind = r.choices(["imperative", "go", "wish", "thing"], [6, 1, 2, 1])[0]
        number = "p" if kind in ("wish", "thing") else r.choice("sp")  # tu / vous (a wish or a bare thing: vous)
        please = r.choices(["end", "start", None], PLEASE_WEIGHTS[kind])[0]
        neg = kind == "imperative" and r.random() < 0.2
        if kind == "go":
            place = self.noun("place", "place", "outdoors")

            def parts(lang: str):
                i = 0 if lang == "en" else 1
                return R.S(R.VP(R.V(("go", "aller")[i]).pe(2).n(number), R.PP(R.P(("to", "à")[i]), np(lang, place, "the")))).t("ip")
        elif kind in ("wish", "thing"):
            obj = self.noun("food", "food", "object", "clothing", "thing")
            det = r.choice(["a", "some", "the", "this"]) if kind == "wish" else r.choice(["a", "a", "some", "the"])
            num = "p" if r.random() < 0.2 else "s"
            we = kind == "wish" and r.random() < 0.2

            def parts(lang: str):
                o = np(lang, obj, det, num)
                if kind == "thing":
                    return o
                pro = R.Pro("I" if lang == "en" else "je").pe(1).n("p" if we else "s")
                return R.S(pro, R.VP(R.V("like" if lang == "en" else "vouloir"), o)).t("c")
        else:
            vkind = r.choice(["object", "object", "food", "food", "clothing", "person"])
            v_en, v_fr = r.choice(REQUESTS[vkind])
            cats = {"object": ("object", "thing", "furniture"), "food": ("food",), "clothing": ("clothing",), "person": ("family", "person", "animal")}[vkind]
            obj = self.noun(*cats)
            det = r.choice(["the", "this", "poss"] + (["some"] if vkind == "food" else []) + (["a"] if v_en in ("buy", "bring", "find", "take") else []))
            num = "p" if r.random() < 0.3 else "s"

            def parts(lang: str):
                o = np(lang, obj, det, num, owner=2, owner_number=number)
                if lang == "en" and " " in v_en:
                    verb, prep = v_en.split()
                    vp = R.VP(R.V(verb), R.PP(R.P(prep), o))
                else:
                    vp = R.VP(R.V(v_en if lang == "en" else v_fr).pe(2).n(number), o)
                return R.S(vp).t("ip")

        def build(lang: str):
            sent = parts(lang)
            return sent.typ({"neg": True}) if neg else sent

        def polite(lang: str, text: str) -> str:
            text = text[0].upper() + text[1:]
            if not text.endswith((".", "!", "?")):
                text += "."
            if please is None:
                return text
            if lang == "fr":
                return text[:-1].rstrip() + (", s'il te plaît." if number == "s" else ", s'il vous plaît.")
            if please == "start":
                return "Please " + text[0].lower() + text[1:]
            return text[:-1].rstrip() + ", please."

        return build, polite

    FRAMES = (("f_event", 2), ("f_illness", 1), ("f_verb_object", 6), ("f_location", 3), ("f_work_go", 3), ("f_describe", 2), ("f_hurts", 2), ("f_weather", 3), ("f_have", 2), ("f_where", 1), ("f_activity", 3), ("f_meal", 1), ("f_play", 1), ("f_request", 2))

    def sentence(self) -> tuple[str, str] | None:
        """A pair of one frame; ``self.direction`` is the direction it trains: "both", or one way
        where it uses a noun learnt one way only (none where it uses nouns of both one-way kinds)."""
        names, weights = zip(*self.FRAMES)
        self.directions = set()
        frame = getattr(self, self.rng.choices(names, weights)[0])()
        one_way = self.directions - {"both"}
        if len(one_way) > 1:
            return None
        self.direction = one_way.pop() if one_way else "both"
        if not isinstance(frame, tuple):
            return self.pair(frame)
        build, finish = frame  # (a frame that edits the realised text: "Please ...")
        pair = self.pair(build)
        return (finish("en", pair[0]), finish("fr", pair[1])) if pair else None


def generate(nouns: Sequence[Noun], days: Sequence[tuple[str, str]], months: Sequence[tuple[str, str]], n: int, seed: int = 0, tries: int = 4,
             directions: bool = False) -> Iterator[tuple[str, ...]]:
    """n distinct (English, French) sentence pairs (fewer if the frames run out of new ones);
    ``directions``: (English, French, the direction it trains) triples."""
    gen = Generator(nouns, days, months, random.Random(seed))
    seen: set[str] = set()
    misses = 0
    while len(seen) < n and misses < n * tries:
        p = gen.sentence()
        if p is None or p[0] in seen:
            misses += 1
            continue
        seen.add(p[0])
        yield (*p, gen.direction) if directions else p


def lexicon_rows(nouns: Sequence[Noun], days: Sequence[tuple[str, str]], months: Sequence[tuple[str, str]], directions: bool = False) -> Iterator[tuple[str, ...]]:
    """Each noun with its article, both numbers ("the dog" / "le chien", "dogs" / "des chiens"), so
    the gender and the plural are seen; the week days and months.  ``directions``: with the
    direction each trains (the noun's)."""
    real = Realiser()
    for n in nouns:
        for det, num in (("the", "s"), ("a", "s"), ("the", "p")):
            en, fr = real("en", partial(np, "en", n, det, num)), real("fr", partial(np, "fr", n, det, num))
            if en and fr:
                yield (en, fr, n.direction) if directions else (en, fr)
    for en, fr in (*days, *months):
        yield (en, fr, "both") if directions else (en, fr)


def source_name(source: str, direction: str) -> str:
    """The corpus's source column for a row of ``source`` that trains ``direction``: "realised",
    "realised>fr" (English -> French only), "realised>en" (``data.split_source`` reads it)."""
    return source if direction == "both" else f"{source}>{direction.split('-')[1]}"


def per_french_word(nouns: Sequence[Noun], keep: int = 2, second_sources: int = 3) -> list[Noun]:
    """Where several English nouns got the same French one (girl, daughter, lad, bachelor ->
    fille/garçon), at most ``keep``: "ma fille" is "my daughter" and "la fille" "the girl", but
    French -> English must not learn the rare or wrong ones (doigt -> flip, oiseau -> poultry,
    frère -> sibling).  The English nouns FreeDict's fra-eng gives for the French word come first,
    then the most common (manteau: coat, then cloak); a second one is kept when fra-eng gives it
    or ``second_sources`` sources do, and it is learnt English -> French only ("infant" ->
    "enfant", while "enfant" -> "child")."""
    by_fr: dict[tuple[str, str], list[Noun]] = {}
    for n in sorted(nouns, key=lambda n: (not n.back, n.rank, n.en)):
        by_fr.setdefault((n.fr, n.gender), []).append(n)
    kept = [n if i == 0 else replace(n, direction="en-fr") for ns in by_fr.values() for i, n in enumerate(ns)
            if i == 0 or (i < keep and n.rank <= MAX_RANK and (n.back or n.sources >= second_sources) and n.direction != "fr-en")]
    return sorted(kept, key=lambda n: (n.rank, n.en))


def calendar(root) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    from rendition.model.training.corpus.lexicon import cldr_calendar

    en, fr = cldr_calendar(root, "en"), cldr_calendar(root, "fr")
    return [(en["days"][k], fr["days"][k]) for k in en["days"]], [(en["months"][k], fr["months"][k]) for k in en["months"]]


SENTENCES = 200_000
MAX_RANK = 35  # nouns placed in sentences: English Zipf frequency >= 3.5 (glove 3.7, mitten 2.5)


class SentenceLexicon(NamedTuple):
    """The lexicon the daily-life sources draw on: its confirmed nouns (at most two per French
    noun), the week days and the months."""

    nouns: list[Noun]
    days: list[tuple[str, str]]
    months: list[tuple[str, str]]

    @property
    def common(self) -> list[Noun]:
        """The nouns placed in sentences (English Zipf >= 3.5)."""
        return [n for n in self.nouns if n.rank <= MAX_RANK]


def sentence_lexicon(root) -> SentenceLexicon:
    """The daily-life lexicon read from unpacked packages under root."""
    from rendition.model.training.corpus.lexicon import build_lexicon

    nouns = per_french_word([n for n in build_lexicon(root) if n.confirmed])
    return SentenceLexicon(nouns, *calendar(root))


def corpus_rows(root, sentences: int = SENTENCES, seed: int = 0, lexicon: SentenceLexicon | None = None) -> Iterator[tuple[str, str, str]]:
    """The corpus sources ``lexicon`` (confirmed nouns with articles, days, months) and ``realised``
    (realised sentences over the common confirmed nouns), read from unpacked packages under root
    (or from ``lexicon``); rows with a noun learnt one way only are ``lexicon>fr`` / ``realised>en`` ...."""
    lex = lexicon or sentence_lexicon(root)
    for en, fr, direction in lexicon_rows(lex.nouns, lex.days, lex.months, directions=True):
        yield source_name("lexicon", direction), en, fr
    for en, fr, direction in generate(lex.common, lex.days, lex.months, sentences, seed, directions=True):
        yield source_name("realised", direction), en, fr
