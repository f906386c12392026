"""Everyday conversation in English and French: the constructions where the two languages differ.

Each *frame* below is a construction written both ways by hand ("avoir faim" / "be hungry",
"depuis" + present / "have been -ing", "il y a" / "ago", "venir de" / "have just", "aller" +
infinitive / "be going to", questions with "est-ce que", inversion or intonation / do-support,
"ne ... pas / jamais / plus / rien / personne", reflexive verbs, the time, ages, prices and dates,
and exchanges in shops, transport, restaurants, at the doctor's, on the phone and asking the way).
A frame's slots are filled from its own lists (persons, verbs, durations) and from the daily-life
lexicon's nouns (``lexicon.Noun``, their noun phrases realised by pyrealb).

A filled frame is an *instance* (``Instance``): its key names the frame and its fillers, and it
holds every surface form of the same content ("Est-ce que tu as faim ?", "As-tu faim ?", "Tu as
faim ?" / "Are you hungry?").  The held-out splits are drawn by instance (``bucket`` of the key),
so no form of a held-out instance is trained on.  Each pair carries the words that show the
construction was translated, not word for word (``words``: "hungry" / "faim").
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rendition.model.training.corpus.lexicon import Noun
from rendition.model.training.data import _bucket, has_word

if TYPE_CHECKING:
    from rendition.model.training.corpus.daily import SentenceLexicon

SOURCE = "conversation"
EXTRA_SOURCE = "convextra"  # the third stream's rows (``Frames.EXTRA``): introductions, wishes, meeting, paying
CLOCK_SOURCE = "convclock"  # the hours of the day with their part (``clock_rows``)
SET_SOURCE = "convset"  # meeting, courtesy, letters, dates and ages said the set way (``set_rows``)
HELD_OUT = 0.02  # fraction of the instances held out for test, and as much for valid
SPLIT_SIZE = 300  # pairs per committed split
SENTENCES = 45_000


# ----------------------------------------------------------------------------- persons and verbs


@dataclass(frozen=True)
class Person:
    en: str  # subject: "I", "you", "he", a name ...
    fr: str  # "je", "tu", "il", "on", a name ...
    fr_slot: int  # French conjugation: 0 je, 1 tu, 2 il/elle/on, 3 nous, 4 vous, 5 ils/elles
    en_slot: int  # English: 0 "I", 1 you/we/they, 2 he/she/it
    gender: str = "m"
    plural: bool = False

    @property
    def pronoun(self) -> str:
        """The French pronoun that repeats the subject in an inversion ("Marie part-elle ?")."""
        return self.fr if self.fr in PRONOUNS else ("elles" if self.plural else "elle") if self.gender == "f" else ("ils" if self.plural else "il")


PRONOUNS = ("je", "tu", "il", "elle", "on", "nous", "vous", "ils", "elles")
ME, YOU, HE, SHE = Person("I", "je", 0, 0), Person("you", "tu", 1, 1), Person("he", "il", 2, 2), Person("she", "elle", 2, 2, "f")
WE, ON, YOU_PL = Person("we", "nous", 3, 1, plural=True), Person("we", "on", 2, 1, plural=True), Person("you", "vous", 4, 1, plural=True)
THEY, THEY_F = Person("they", "ils", 5, 1, plural=True), Person("they", "elles", 5, 1, "f", True)
# first names stay as they are in both languages
NAMES = [("Marie", "f"), ("Pierre", "m"), ("Julien", "m"), ("Sophie", "f"), ("Camille", "f"), ("Thomas", "m"), ("Léa", "f"), ("Nicolas", "m"),
         ("Emma", "f"), ("Guillaume", "m"), ("Chloé", "f"), ("Antoine", "m"), ("Jean", "m"), ("Hélène", "f"), ("Étienne", "m"), ("Claire", "f"),
         ("Peter", "m"), ("Sarah", "f"), ("Michael", "m"), ("Emily", "f"), ("James", "m"), ("Anna", "f"), ("David", "m"), ("Laura", "f")]  # fmt: skip
PEOPLE = [Person(n, n, 2, 2, g) for n, g in NAMES]
SUBJECTS = [ME, ME, YOU, YOU, HE, SHE, WE, ON, YOU_PL, THEY, THEY_F, *PEOPLE[::3]]

EN_BE = ("am", "are", "is")
EN_WAS = ("was", "were", "was")
FR_ETRE = ("suis", "es", "est", "sommes", "êtes", "sont")
FR_AVOIR = ("ai", "as", "a", "avons", "avez", "ont")
FR_ALLER = ("vais", "vas", "va", "allons", "allez", "vont")
FR_VENIR = ("viens", "viens", "vient", "venons", "venez", "viennent")
FR_POUVOIR = ("peux", "peux", "peut", "pouvons", "pouvez", "peuvent")
FR_IMPARFAIT = ("ais", "ais", "ait", "ions", "iez", "aient")


@dataclass(frozen=True)
class Verb:
    fr: str  # infinitive
    present: tuple[str, ...]  # je .. ils
    participle: str
    en: str  # base form
    past: str
    en_participle: str
    etre: bool = False  # passé composé with être
    ing: str = ""  # English -ing form where not regular
    stem: str = ""  # imparfait stem where not the nous form's

    def en_present(self, slot: int) -> str:
        if slot < 2:
            return self.en
        w = self.en
        if w == "have":
            return "has"
        if w.endswith(("s", "sh", "ch", "x", "o")):
            return w + "es"
        if w.endswith("y") and w[-2] not in "aeiou":
            return w[:-1] + "ies"
        return w + "s"

    def en_ing(self) -> str:
        if self.ing:
            return self.ing
        w = self.en
        return w[:-1] + "ing" if w.endswith("e") and not w.endswith(("ee", "ye")) else w + "ing"

    def imparfait(self, slot: int) -> str:
        return (self.stem or self.present[3].removesuffix("ons")) + FR_IMPARFAIT[slot]

    def fr_participle(self, p: Person) -> str:
        """The participle, agreeing with the subject where the auxiliary is être."""
        if not self.etre:
            return self.participle
        return self.participle + ("e" if p.gender == "f" else "") + ("s" if p.plural and p.fr != "on" else "")


def er(inf: str, en: str, past: str, pp: str = "", ing: str = "", etre: bool = False) -> Verb:
    """A regular -er verb ("manger": mangeons, "commencer": commençons)."""
    stem = inf[:-2]
    nous = stem + ("e" if stem.endswith("g") else "") + "ons"
    nous = nous[:-4] + "çons" if stem.endswith("c") else nous
    return Verb(inf, (stem + "e", stem + "es", stem + "e", nous, stem + "ez", stem + "ent"), stem + "é", en, past, pp or past, etre, ing)


V = {
    "attendre": Verb("attendre", ("attends", "attends", "attend", "attendons", "attendez", "attendent"), "attendu", "wait", "waited", "waited"),
    "travailler": er("travailler", "work", "worked"),
    "habiter": er("habiter", "live", "lived"),
    "dormir": Verb("dormir", ("dors", "dors", "dort", "dormons", "dormez", "dorment"), "dormi", "sleep", "slept", "slept"),
    "partir": Verb("partir", ("pars", "pars", "part", "partons", "partez", "partent"), "parti", "leave", "left", "left", True),
    "sortir": Verb("sortir", ("sors", "sors", "sort", "sortons", "sortez", "sortent"), "sorti", "go out", "went out", "gone out", True, "going out"),
    "arriver": er("arriver", "arrive", "arrived", etre=True),
    "rentrer": er("rentrer", "come home", "came home", "come home", "coming home", True),
    "venir": Verb("venir", FR_VENIR, "venu", "come", "came", "come", True),
    "lire": Verb("lire", ("lis", "lis", "lit", "lisons", "lisez", "lisent"), "lu", "read", "read", "read"),
    "écrire": Verb("écrire", ("écris", "écris", "écrit", "écrivons", "écrivez", "écrivent"), "écrit", "write", "wrote", "written"),
    "manger": er("manger", "eat", "ate", "eaten"),
    "boire": Verb("boire", ("bois", "bois", "boit", "buvons", "buvez", "boivent"), "bu", "drink", "drank", "drunk"),
    "étudier": er("étudier", "study", "studied"),
    "jouer": er("jouer", "play", "played"),
    "chercher": er("chercher", "look for", "looked for", ing="looking for"),
    "apprendre": Verb("apprendre", ("apprends", "apprends", "apprend", "apprenons", "apprenez", "apprennent"), "appris", "learn", "learnt", "learnt"),
    "courir": Verb("courir", ("cours", "cours", "court", "courons", "courez", "courent"), "couru", "run", "ran", "run", ing="running"),
    "nager": er("nager", "swim", "swam", "swum", "swimming"),
    "conduire": Verb("conduire", ("conduis", "conduis", "conduit", "conduisons", "conduisez", "conduisent"), "conduit", "drive", "drove", "driven"),
    "pleurer": er("pleurer", "cry", "cried"),
    "parler": er("parler", "talk", "talked"),
    "marcher": er("marcher", "walk", "walked"),
    "cuisiner": er("cuisiner", "cook", "cooked"),
    "téléphoner": er("téléphoner", "phone", "phoned"),
    "finir": Verb("finir", ("finis", "finis", "finit", "finissons", "finissez", "finissent"), "fini", "finish", "finished", "finished"),
    "commencer": er("commencer", "start", "started"),
    "fumer": er("fumer", "smoke", "smoked"),
    "voir": Verb("voir", ("vois", "vois", "voit", "voyons", "voyez", "voient"), "vu", "see", "saw", "seen"),
    "comprendre": Verb("comprendre", ("comprends", "comprends", "comprend", "comprenons", "comprenez", "comprennent"), "compris", "understand", "understood", "understood"),
    "connaître": Verb("connaître", ("connais", "connais", "connaît", "connaissons", "connaissez", "connaissent"), "connu", "know", "knew", "known"),
    "aimer": er("aimer", "like", "liked"),
    "acheter": Verb("acheter", ("achète", "achètes", "achète", "achetons", "achetez", "achètent"), "acheté", "buy", "bought", "bought"),
    "prendre": Verb("prendre", ("prends", "prends", "prend", "prenons", "prenez", "prennent"), "pris", "take", "took", "taken"),
    "faire": Verb("faire", ("fais", "fais", "fait", "faisons", "faites", "font"), "fait", "do", "did", "done"),
    "aller": Verb("aller", FR_ALLER, "allé", "go", "went", "gone", True),
    "fermer": er("fermer", "close", "closed"),
    "ouvrir": Verb("ouvrir", ("ouvre", "ouvres", "ouvre", "ouvrons", "ouvrez", "ouvrent"), "ouvert", "open", "opened", "opened"),
}
# what people do for a while: "depuis" + present / "have been -ing"
ACTIVITIES = ["attendre", "travailler", "dormir", "lire", "écrire", "étudier", "jouer", "courir", "nager", "conduire", "pleurer", "parler", "marcher", "cuisiner", "marcher"]
# states: "depuis" + present / "have lived", "have known" (no progressive)
STATIVE = [("habiter", "ici", "here"), ("travailler", "ici", "here"), ("habiter", "à Paris", "in Paris"), ("habiter", "en France", "in France"),
           ("connaître", "Marie", "Marie"), ("connaître", "Paul", "Paul"), ("habiter", "dans cette rue", "in this street"), ("travailler", "à la gare", "at the station")]  # fmt: skip
# one-off events: "il y a" / "ago", "venir de" / "have just"
EVENTS = ["partir", "arriver", "rentrer", "sortir", "manger", "téléphoner", "finir", "commencer", "dormir", "boire", "écrire"]
# "aller" + infinitive / "be going to"
GOING = ["partir", "manger", "dormir", "travailler", "sortir", "rentrer", "cuisiner", "nager", "conduire", "téléphoner", "lire", "étudier", "commencer", "finir"]

NUM_EN = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split()
NUM_FR = "zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize dix-sept dix-huit dix-neuf vingt".split()
# (English singular, French singular, French gender, French plural, counts)
UNITS = [("minute", "minute", "f", "minutes", (5, 10, 15, 20)), ("hour", "heure", "f", "heures", (1, 2, 3, 4)), ("day", "jour", "m", "jours", (1, 2, 3, 5, 10)),
         ("week", "semaine", "f", "semaines", (1, 2, 3)), ("month", "mois", "m", "mois", (1, 2, 6)), ("year", "an", "m", "ans", (1, 2, 3, 5, 10, 20))]  # fmt: skip
# points in time: "depuis ce matin" / "since this morning"
SINCE = [("this morning", "ce matin"), ("yesterday", "hier"), ("last week", "la semaine dernière"), ("Monday", "lundi"), ("Friday", "vendredi"),
         ("eight o'clock", "huit heures"), ("noon", "midi"), ("January", "janvier"), ("last summer", "l'été dernier"), ("Christmas", "Noël"),
         ("2019", "2019"), ("last night", "hier soir"), ("the beginning of the year", "le début de l'année")]  # fmt: skip
# the months, for dates: "le 4 mars" / "4 March", "March 4th"
MONTHS = [("January", "janvier"), ("February", "février"), ("March", "mars"), ("April", "avril"), ("May", "mai"), ("June", "juin"), ("July", "juillet"),
          ("August", "août"), ("September", "septembre"), ("October", "octobre"), ("November", "novembre"), ("December", "décembre")]  # fmt: skip


def hours_fr(h: int) -> str:
    """1 -> "une heure", 8 -> "huit heures": an hour of the clock in French."""
    return "une heure" if h == 1 else f"{NUM_FR[h]} heures"


def duration(n: int, unit: tuple) -> tuple[str, str]:
    """("two hours", "deux heures"), ("an hour", "une heure")."""
    en, fr, gender, fr_plural, _ = unit
    if n == 1:
        return ("an " if en[0] in "aeiouh" else "a ") + en, ("une " if gender == "f" else "un ") + fr
    return f"{NUM_EN[n]} {en}s", f"{NUM_FR[n]} {fr_plural}"


def durations(units: Sequence[str]) -> list[tuple[str, str]]:
    return [duration(n, u) for u in UNITS if u[0] in units for n in u[4]]


SHORT = durations(("minute", "hour"))  # how long one waits, sleeps, drives ...
LONG = durations(("day", "week", "month", "year")) + [("a long time", "longtemps")]  # how long one has lived, worked, known ...
AGO = durations(("minute", "hour", "day", "week"))
SINCE_SHORT = SINCE[:1] + [s for s in SINCE if s[1] in ("huit heures", "midi", "hier soir")]


# ----------------------------------------------------------------------------- text


_ELIDE = ("je", "ne", "de", "que", "me", "te", "se", "jusque", "lorsque", "puisque")
_VOWELS = "aeiouyéèêëàâîïôûœh"


def elide(text: str) -> str:
    """French elision and contraction over a template's words: "je ai" -> "j'ai", "ne est" ->
    "n'est", "de un" -> "d'un", "à le" -> "au", "de les" -> "des", "si il" -> "s'il"."""
    words = text.split(" ")
    out: list[str] = []
    for w in words:
        if out and out[-1].lower() in _ELIDE and w[:1].lower() in _VOWELS:
            out[-1] = out[-1][:-1] + "'" + w
            continue
        if out and out[-1].lower() in ("à", "de") and w in ("le", "les"):
            prev = out.pop()
            out.append({("à", "le"): "au", ("à", "les"): "aux", ("de", "le"): "du", ("de", "les"): "des"}[prev.lower(), w])
            continue
        if out and out[-1] == "si" and w in ("il", "ils"):
            out[-1] = "s'" + w
            continue
        out.append(w)
    return " ".join(out).replace("' ", "'")


def finish(text: str, lang: str) -> str:
    """Capitalised, no space before . and , (an empty slot leaves one), one before French ? ! :."""
    text = re.sub(r" +([.,?!:])", r"\1", " ".join(text.split()))
    if lang == "fr":
        text = re.sub(r"(?<=\S)([?!:])(?=\s|$)", r" \1", elide(text))
    return text[0].upper() + text[1:]


@dataclass
class Instance:
    """One filled frame: its key, its forms (English, French) and the words each side must hold."""

    key: str
    forms: list[tuple[str, str]]
    en_words: list[str] = field(default_factory=list)  # in an English translation
    fr_words: list[str] = field(default_factory=list)  # in a French translation
    group: str = ""  # the instance whose split this one shares ("I am very hungry now." goes with "I am hungry.")

    @property
    def frame(self) -> str:
        return self.key.split("|")[0]

    @property
    def split(self) -> str:
        """The split ("train", "valid" or "test"), by the key of its group."""
        return split_of(self.group or self.key)


def inst(key: str, forms: list[tuple[str, str]], en_words: Sequence[str] = (), fr_words: Sequence[str] = (), group: str = "") -> Instance:
    """An instance; each English form also comes as it is spoken (``spoken``: "I've just eaten.",
    "It's raining.") where that keeps the words of its construction."""
    done = [(finish(e, "en"), finish(f, "fr")) for e, f in forms]
    for e, f in list(done):
        short = spoken(e)
        if short != e and (short, f) not in done and all(has_word(short, w) for w in en_words):
            done.append((short, f))
    return Instance(key, done, list(en_words), list(fr_words), group)


# English as it is spoken: the contractions of a pronoun (or "there", "what", "where", "that") with
# the verb after it, and of "not"
_NOT = [(r"\bdo not\b", "don't"), (r"\bdoes not\b", "doesn't"), (r"\bdid not\b", "didn't"), (r"\bhave not\b", "haven't"), (r"\bhas not\b", "hasn't"),
        (r"\bhad not\b", "hadn't"), (r"\bwas not\b", "wasn't"), (r"\bwere not\b", "weren't"), (r"\bcannot\b", "can't"), (r"\bwill not\b", "won't"),
        (r"\bwould not\b", "wouldn't"), (r"\bcould not\b", "couldn't")]  # fmt: skip
_PERFECT = r"(?=(?:been|just|never|already|ever|got|had|done|gone|seen|eaten|drunk|read|written|slept|bought|taken|left|come|run|swum|driven|understood|known|learnt|\w+ed)\b)"
_SPOKEN = [
    (r"\b(I) am\b", r"\1'm"),
    (r"\b([Yy]ou|[Ww]e|[Tt]hey) are not\b", r"\1 aren't"),
    (r"\b([Hh]e|[Ss]he|[Ii]t|[Tt]here|[Tt]hat) is not\b", r"\1 isn't"),
    (r"\b([Yy]ou|[Ww]e|[Tt]hey) are(?= \w)", r"\1're"),
    (r"\b([Hh]e|[Ss]he|[Ii]t|[Tt]here|[Tt]hat|[Ww]hat|[Ww]here) is(?= \w)", r"\1's"),
    (r"\b(I|[Yy]ou|[Ww]e|[Tt]hey) have " + _PERFECT, r"\1've "),
    (r"\b([Hh]e|[Ss]he|[Ii]t) has " + _PERFECT, r"\1's "),
    (r"\b(I|[Yy]ou|[Hh]e|[Ss]he|[Ww]e|[Tt]hey|[Ii]t) will\b", r"\1'll"),
    (r"\b(I|[Yy]ou|[Hh]e|[Ss]he|[Ww]e|[Tt]hey) would\b(?! not)", r"\1'd"),
]


def spoken(text: str) -> str:
    """``text`` contracted as English is spoken: "I am" -> "I'm", "he is not" -> "he isn't", "we
    have just" -> "we've just" (a perfect, not "have" as possession), "it is" -> "it's" (not at a
    clause's end: "where it is."), "do not" -> "don't", "I would" -> "I'd"."""
    for pattern, short in _NOT:
        text = re.sub(pattern, short, text)
    for pattern, short in _SPOKEN:
        text = re.sub(pattern, short, text)
    return text


def question_forms(p: Person, verb: str, rest: str, word: str = "") -> list[str]:
    """A French question three ways: intonation, "est-ce que" and inversion ("Tu as faim ?",
    "Est-ce que tu as faim ?", "As-tu faim ?"; "Marie a-t-elle faim ?"); ``word`` a question word
    before it ("Où", "À quelle heure")."""
    lead = word + " " if word else ""
    t = "-t-" if verb[-1] in "aec" else "-"
    pro = p.pronoun
    if p.fr in PRONOUNS:
        inverted = f"{lead}{verb}{t}{pro} {rest}" if p.fr != "je" else None
    else:
        inverted = f"{lead}{p.fr} {verb}{t}{pro} {rest}"
    forms = [f"{lead}est-ce que {p.fr} {verb} {rest} ?"]
    if not word:
        forms.append(f"{p.fr} {verb} {rest} ?")
    if inverted:
        forms.append(inverted + " ?")
    return forms


# ----------------------------------------------------------------------------- frames


LEADS = [("", ""), ("Excuse me, ", "Excusez-moi, "), ("Sorry, ", "Pardon, "), ("Hello, ", "Bonjour, ")]  # before a request
# wishes (English without its "!", French without its " !")
WISHES = [("Happy birthday", "Joyeux anniversaire"), ("Happy birthday", "Bon anniversaire"), ("Merry Christmas", "Joyeux Noël"),
          ("Happy New Year", "Bonne année"), ("Enjoy your meal", "Bon appétit"), ("Have a good trip", "Bon voyage"), ("Good luck", "Bonne chance"),
          ("Have a nice day", "Bonne journée"), ("Have a good evening", "Bonne soirée"), ("Have a good weekend", "Bon week-end"),
          ("Get well soon", "Bon rétablissement"), ("Congratulations", "Félicitations"), ("Sleep well", "Dors bien"), ("Have a good holiday", "Bonnes vacances")]  # fmt: skip
STATES = [("hungry", "faim"), ("thirsty", "soif"), ("cold", "froid"), ("hot", "chaud"), ("afraid", "peur"), ("sleepy", "sommeil"), ("right", "raison"), ("wrong", "tort")]
WANTS = [("sleeping", "dormir", "dormir"), ("going out", "sortir", "sortir"), ("eating pizza", "manger une pizza", "pizza"), ("going to the beach", "aller à la plage", "plage"),
         ("dancing", "danser", "danser"), ("staying at home", "rester à la maison", "rester"), ("a coffee", "un café", "café"), ("an ice cream", "une glace", "glace"),
         ("watching a film", "regarder un film", "film"), ("going for a walk", "me promener", "promener")]  # fmt: skip


# the states in context (``f_state_more``): who, how, when, what for
STATE_SUBJECTS = [ME, ME, ME, ME, YOU, YOU, WE, ON, YOU_PL, HE, SHE, THEY, *PEOPLE[::4]]
STATE_ADVERBS = [("", ""), ("very ", "très "), ("a bit ", "un peu "), ("really ", "vraiment "), ("so ", "tellement "), ("still ", "encore "), ("always ", "toujours ")]
STATE_ADVERBS_JUDGEMENT = [("", ""), ("really ", "vraiment "), ("absolutely ", "tout à fait "), ("always ", "toujours ")]  # right, wrong
STATE_ADVERBS_NEG = [("", ""), ("very ", "très "), ("really ", "vraiment ")]
STATE_TAILS = [("", ""), ("", ""), (" now", " maintenant"), (" today", " aujourd'hui"), (" too", " aussi"), (" tonight", " ce soir"), (" this morning", " ce matin")]
STATE_TAILS_PAST = [("", ""), ("", ""), (" this morning", " ce matin"), (" yesterday", " hier"), (" last night", " hier soir"), (" too", " aussi")]
STATE_TAILS_NEG = [("", ""), ("", ""), (" now", " maintenant"), (" today", " aujourd'hui"), (" either", " non plus")]
STATE_OF = [(" of the dark", " du noir"), (" of dogs", " des chiens"), (" of spiders", " des araignées"), (" of the sea", " de la mer")]  # avoir peur de
STATE_CLAUSES = {"faim": [(", let's eat", ", on mange"), (", is there anything to eat?", ", il y a quelque chose à manger ?")],
                 "soif": [(", is there any water?", ", il y a de l'eau ?")], "froid": [(", close the window", ", ferme la fenêtre")],
                 "chaud": [(", open the window", ", ouvre la fenêtre")], "sommeil": [(", I'm going to bed", ", je vais me coucher")]}  # fmt: skip
STATE_LEADS = [("", ""), ("", ""), ("", ""), ("Oh, ", "Oh, "), ("Mum, ", "Maman, "), ("Dad, ", "Papa, "), ("Well, ", "Eh bien, "), ("Honestly, ", "Franchement, "), ("No, ", "Non, "),
               ("Yes, ", "Oui, ")]  # (the last two not before a negation)  # fmt: skip
# the weather: (English, French, English past, French past, takes "very")
WEATHER = [("the weather is nice", "il fait beau", "the weather was nice", "il faisait beau", True), ("the weather is bad", "il fait mauvais", "the weather was bad", "il faisait mauvais", True),
           ("it is hot", "il fait chaud", "it was hot", "il faisait chaud", True), ("it is cold", "il fait froid", "it was cold", "il faisait froid", True),
           ("it is mild", "il fait doux", "it was mild", "il faisait doux", False), ("it is dark", "il fait nuit", "it was dark", "il faisait nuit", False),
           ("it is raining", "il pleut", "it was raining", "il pleuvait", False), ("it is snowing", "il neige", "it was snowing", "il neigeait", False),
           ("it is windy", "il y a du vent", "it was windy", "il y avait du vent", False), ("it is sunny", "il y a du soleil", "it was sunny", "il y avait du soleil", False),
           ("it is foggy", "il y a du brouillard", "it was foggy", "il y avait du brouillard", False)]  # fmt: skip
WEATHER_ADVERBS = [("", ""), ("very ", "très "), ("a bit ", "un peu "), ("too ", "trop "), ("really ", "vraiment ")]
WEATHER_TAILS = [("", ""), ("", ""), (" today", " aujourd'hui"), (" this morning", " ce matin"), (" tonight", " ce soir"), (" outside", " dehors"), (" in Paris", " à Paris"), (" here", " ici")]
WEATHER_TAILS_PAST = [("", ""), (" yesterday", " hier"), (" last night", " hier soir"), (" this morning", " ce matin"), (" in Paris", " à Paris")]
WEATHER_CLAUSES = {"il pleut": [(", take an umbrella", ", prends un parapluie"), (", take your umbrella", ", prenez votre parapluie")],
                   "il fait froid": [(", take a coat", ", prends un manteau"), (", close the window", ", ferme la fenêtre")],
                   "il fait beau": [(", let's go for a walk", ", allons nous promener"), (", let's eat outside", ", mangeons dehors")],
                   "il fait chaud": [(", let's go to the beach", ", allons à la plage"), (", open the window", ", ouvre la fenêtre")],
                   "il neige": [(", put on your boots", ", mets tes bottes")], "il y a du soleil": [(", let's go to the beach", ", allons à la plage")],
                   "il fait mauvais": [(", let's stay at home", ", restons à la maison")], "il y a du vent": [(", close the door", ", ferme la porte")],
                   "il y a du brouillard": [(", drive slowly", ", roule doucement")]}  # fmt: skip
# avoir mal à: (English, French, English takes "have": "a headache" against "my back hurts")
HURTS = [("a headache", "à la tête", True), ("a stomach ache", "au ventre", True), ("toothache", "aux dents", True), ("a sore throat", "à la gorge", True),
         ("back", "au dos", False), ("foot", "au pied", False), ("arm", "au bras", False), ("leg", "à la jambe", False), ("eyes", "aux yeux", False),
         ("feet", "aux pieds", False), ("knee", "au genou", False), ("ear", "à l'oreille", False)]  # fmt: skip
HURT_SINCE = [("since yesterday", "hier"), ("since this morning", "ce matin"), ("for two days", "deux jours"), ("for a week", "une semaine"), ("since Monday", "lundi")]
FR_ETRE_IMPARFAIT = ("étais", "étais", "était", "étions", "étiez", "étaient")
ASK_WHO = [("you", "tu", True), ("you", "vous", False), ("your son", "ton fils", True), ("your daughter", "ta fille", True), ("your children", "tes enfants", True),
           ("your son", "votre fils", False), ("your daughter", "votre fille", False), ("your brother", "ton frère", True), ("your sister", "ta sœur", True),
           ("your dog", "ton chien", True), ("your car", "ta voiture", True), ("your parents", "tes parents", True), ("Marie", "Marie", True), ("Pierre", "Pierre", True)]  # fmt: skip
CONTRACT = {"I": "I'm", "you": "you're", "he": "he's", "she": "she's", "we": "we're", "they": "they're"}


def contract(text: str, subject: str, verb: str) -> str:
    """English as it is spoken: "I am not" -> "I'm not", "he is not" -> "he isn't", "we were not"
    -> "we weren't", "you are" -> "you're"."""
    for full, short in ((f"{subject} am not", "I'm not"), (f"{subject} {verb} not", f"{subject} {verb}n't")):
        if f" {full} " in f" {text} ":
            return text.replace(full, short, 1)
    return text.replace(f"{subject} {verb}", CONTRACT.get(subject, f"{subject} {verb}"), 1)


# the lexicon's nouns a conversation names (its frequent words include senses no one talks about:
# "well", "trump", "special"); their French word, gender and plural come from the lexicon
EVERYDAY = frozenset("""
umbrella key bag cup glass bottle book pen ticket map towel phone letter newspaper box lamp clock plate knife fork spoon
computer camera watch wallet passport toy ball candle blanket pillow
coat jacket hat shoe shirt dress skirt scarf glove sock sweater trousers
apple orange bread cheese milk coffee tea wine beer cake egg chicken rice butter juice chocolate banana sugar salt
soup meat fish pizza salad water tomato potato carrot strawberry sandwich biscuit jam
dog cat bird mouse spider horse rabbit cow sheep duck fox
car bus bicycle bike train boat
table chair bed desk couch sofa bench shelf cupboard
""".split())
# where a thing is: "in the kitchen" / "dans la cuisine", "on the table" / "sur la table"
ROOMS = frozenset("kitchen garden bathroom bedroom house car room office street shop school station park fridge box bag cupboard living room".split())
FURNITURE = frozenset("table chair bed desk couch sofa bench shelf".split())


class Frames:
    """The frames; each method draws one instance."""

    def __init__(
        self, nouns: Sequence[Noun], rng: random.Random, side: random.Random | None = None, extra: random.Random | None = None
    ) -> None:
        self.rng = rng
        self.side = side or random.Random(0)  # the states in context draw from their own stream
        self.extra = extra  # introductions, wishes, meeting and paying: a third stream (None: none of them)
        self.by_cat: dict[str, list[Noun]] = {}
        for n in nouns:
            if n.en in EVERYDAY:
                self.by_cat.setdefault(n.category, []).append(n)
        self.places = [n for n in nouns if n.en in ROOMS or n.en in FURNITURE]
        self._np: dict[tuple, tuple[str, str] | None] = {}

    def noun_phrase(self, noun: Noun, det: str, number: str = "s") -> tuple[str, str] | None:
        """("an umbrella", "un parapluie"): a lexicon noun with its article, realised by pyrealb."""
        key = (noun, det, number)
        if key not in self._np:
            from rendition.model.training.corpus.daily import Realiser, np

            real = Realiser()
            en, fr = real("en", partial(np, "en", noun, det, number)), real("fr", partial(np, "fr", noun, det, number))
            self._np[key] = (en, fr) if en and fr else None
        return self._np[key]

    def noun(self, *cats: str) -> Noun | None:
        pool = [n for c in cats for n in self.by_cat.get(c, [])]
        return self.rng.choice(pool) if pool else None

    def pick(self, seq):
        return self.rng.choice(seq)

    # avoir faim / soif / froid ... <-> be hungry / thirsty / cold ...
    def f_state(self) -> Instance:
        p, (en, fr) = self.pick(SUBJECTS), self.pick(STATES)
        form = self.pick(["present", "present", "question", "negative", "past", "very", "question_neg"])
        be, av = EN_BE[p.en_slot] if p.en != "I" else "am", FR_AVOIR[p.fr_slot]
        key = f"state|{p.fr}|{fr}|{form}"
        if form == "present":
            forms = [(f"{p.en} {be} {en}.", f"{p.fr} {av} {fr}.")]
        elif form == "very":
            forms = [(f"{p.en} {be} very {en}.", f"{p.fr} {av} très {fr}.")]
        elif form == "negative":
            forms = [(f"{p.en} {be} not {en}.", f"{p.fr} ne {av} pas {fr}.")]
        elif form == "past":
            forms = [(f"{p.en} {EN_WAS[p.en_slot]} {en}.", f"{p.fr} av{FR_IMPARFAIT[p.fr_slot]} {fr}.")]
        elif form == "question_neg":
            en_q = f"Am I not {en}?" if be == "am" else f"{be.capitalize()}n't {p.en} {en}?"
            forms = [(en_q, f"{p.fr} n'{av} pas {fr} ?")]
        else:
            forms = [(f"{be} {p.en} {en}?", f) for f in question_forms(p, av, fr)]
        if form in ("present", "very", "negative") and p.en in CONTRACT:  # "I'm hungry.", "He isn't cold."
            forms.append((contract(forms[0][0], p.en, be), forms[0][1]))
        return inst(key, forms, [en], [fr])

    # the same states in context: "Oh, I'm still hungry.", "We were a bit cold last night.",
    # "Je n'ai plus faim.", "Tu as encore soif ?" (the split goes by the plain instance's)
    def f_state_more(self) -> Instance | None:
        p, (en, fr) = self.pick(STATE_SUBJECTS), self.pick(STATES)
        kind = self.pick(["present", "present", "present", "past", "negative", "no_longer", "negative_past", "question"])
        if kind == "question" and p == ME:
            p = self.pick([YOU, YOU_PL, HE, SHE])
        be, was, av = EN_BE[p.en_slot] if p.en != "I" else "am", EN_WAS[p.en_slot], FR_AVOIR[p.fr_slot]
        adverbs = STATE_ADVERBS_JUDGEMENT if fr in ("raison", "tort") else STATE_ADVERBS
        adv_en, adv_fr = self.pick(adverbs if kind in ("present", "past", "question") else STATE_ADVERBS_NEG if kind == "negative" else [("", "")])
        negative = kind in ("negative", "no_longer", "negative_past")
        if fr in ("raison", "tort"):
            tails = STATE_TAILS_NEG[:2] + STATE_TAILS_NEG[-1:] if negative else STATE_TAILS[:2] + [(" too", " aussi")]
        else:
            tails = {"past": STATE_TAILS_PAST, "negative_past": STATE_TAILS_PAST[:-1] + STATE_TAILS_NEG[-1:], "negative": STATE_TAILS_NEG,
                     "no_longer": STATE_TAILS_NEG[:2] + STATE_TAILS_NEG[-2:]}.get(kind, STATE_TAILS)  # fmt: skip
            tails = tails + STATE_CLAUSES.get(fr, []) if kind == "present" else tails
            tails = tails + STATE_OF if fr == "peur" and kind != "question" else tails
        tail_en, tail_fr = self.pick(tails)
        clause = tail_en.startswith(",")
        lead_en, lead_fr = ("", "") if kind == "question" or clause else self.pick(STATE_LEADS[:-2] if negative else STATE_LEADS)
        if not (adv_en or tail_en or lead_en) and kind in ("present", "past", "negative", "question"):
            return None  # the plain instance (f_state)
        stop = "" if tail_en.endswith("?") else "."
        plain = "present" if kind == "present" else "past" if kind == "past" else "question" if kind == "question" else "negative"
        group = f"state|{p.fr}|{fr}|{plain}"
        if kind == "question":
            forms = [(f"{be} {p.en} {adv_en}{en}{tail_en}?", f) for f in question_forms(p, av, f"{adv_fr}{fr}{tail_fr}")]
        else:
            verb_en = {"present": be, "past": was, "negative": be + " not", "no_longer": be + " not", "negative_past": was + " not"}[kind]
            verb_fr = {"present": av, "past": "av" + FR_IMPARFAIT[p.fr_slot], "negative": f"ne {av} pas", "no_longer": f"ne {av} plus",
                       "negative_past": f"ne av{FR_IMPARFAIT[p.fr_slot]} pas"}[kind]  # fmt: skip
            after = " any more" if kind == "no_longer" else ""
            fr_text = f"{lead_fr}{p.fr} {verb_fr} {adv_fr}{fr}{tail_fr}{stop}"
            forms = [(f"{lead_en}{p.en} {verb_en} {adv_en}{en}{after}{tail_en}{stop}", fr_text)]
            if kind == "no_longer":
                forms.append((f"{lead_en}{p.en} {verb_en} {adv_en}{en} anymore{tail_en}{stop}", fr_text))
            if kind != "past" and (p.en in CONTRACT or "not" in verb_en):
                forms += [(contract(e, p.en, verb_en.split()[0]), f) for e, f in forms]
        key = f"state|{p.fr}|{fr}|{kind}|{lead_fr}|{adv_fr}|{tail_fr}"
        return inst(key, forms, [en], [fr], group=group)

    # avoir besoin de / avoir envie de <-> need / feel like
    def f_need(self) -> Instance | None:
        p = self.pick(SUBJECTS)
        av = FR_AVOIR[p.fr_slot]
        need = "needs" if p.en_slot == 2 else "need"
        if self.rng.random() < 0.5:
            n = self.noun("object", "clothing", "food", "thing", "furniture")
            phrase = n and self.noun_phrase(n, "a" if n.countable else "some")
            if n is None or not phrase:
                return None
            en_np, fr_np = phrase
            fr_np = fr_np.removeprefix("du ").removeprefix("de la ").removeprefix("de l'")  # "besoin de pain"
            neg = self.rng.random() < 0.3
            if neg:
                do = "doesn't" if p.en_slot == 2 else "don't"
                return inst(f"need|{p.fr}|{n.en}|neg", [(f"{p.en} {do} need {en_np}.", f"{p.fr} n'{av} pas besoin de {fr_np}.")], ["need"], ["besoin"])
            return inst(f"need|{p.fr}|{n.en}", [(f"{p.en} {need} {en_np}.", f"{p.fr} {av} besoin de {fr_np}.")], ["need*"], ["besoin"])
        en, fr, word = self.pick(WANTS)
        if fr.startswith("me ") and p.fr != "je":
            return None
        feel = "feels" if p.en_slot == 2 else "feel"
        return inst(f"want|{p.fr}|{fr}", [(f"{p.en} {feel} like {en}.", f"{p.fr} {av} envie de {fr}.")], ["feel*", "like"], ["envie"])

    # depuis + present <-> have been -ing / have lived ... for / since
    def f_since(self) -> Instance:
        p = self.pick(SUBJECTS)
        has = "has" if p.en_slot == 2 else "have"
        r = self.rng.random()
        long = 0.15 <= r < 0.45 or r >= 0.6 and self.rng.random() < 0.3  # states last days or years; most activities minutes or hours
        if self.rng.random() < 0.5:
            en_t, fr_t = self.pick(LONG if long else SHORT)
            en_t = "for " + en_t
        else:
            en_t, fr_t = self.pick(SINCE if long else SINCE_SHORT)
            en_t = "since " + en_t
        if r < 0.15:  # the weather
            en_v, fr_v = self.pick([("raining", "pleut"), ("snowing", "neige")])
            return inst(f"since|weather|{fr_v}|{fr_t}", [(f"It has been {en_v} {en_t}.", f"Il {fr_v} depuis {fr_t}.")], ["has been", en_t.split()[0]], ["depuis"])
        if r < 0.45:
            verb, fr_rest, en_rest = self.pick(STATIVE)
            v = V[verb]
            if fr_rest == p.fr:
                p = ME
            if r < 0.25 and verb == "habiter" and fr_rest == "ici":  # "How long have you lived here?"
                q = self.pick([YOU, YOU_PL, p])
                has_q = "has" if q.en_slot == 2 else "have"
                forms = [(f"How long {has_q} {q.en} {v.past} here?", f) for f in question_forms(q, v.present[q.fr_slot], "ici", "depuis combien de temps")]
                return inst(f"since|q|{q.fr}|{verb}", forms, ["how long", has_q], ["depuis"])
            return inst(f"since|{p.fr}|{verb}|{fr_rest}|{fr_t}", [(f"{p.en} {has} {v.en_participle} {en_rest} {en_t}.", f"{p.fr} {v.present[p.fr_slot]} {fr_rest} depuis {fr_t}.")],
                        [has, v.en_participle], ["depuis"])
        v = V[self.pick(ACTIVITIES)]
        if long and v.fr not in ("travailler", "étudier", "apprendre", "jouer"):
            en_t, fr_t = self.pick([("for " + d[0], d[1]) for d in SHORT] + [("since " + d[0], d[1]) for d in SINCE_SHORT])
        if r < 0.6:  # "How long have you been waiting?"
            q = self.pick([YOU, YOU_PL, p])
            has_q = "has" if q.en_slot == 2 else "have"
            forms = [(f"How long {has_q} {q.en} been {v.en_ing()}?", f) for f in question_forms(q, v.present[q.fr_slot], "", "depuis combien de temps")]
            return inst(f"since|q|{q.fr}|{v.fr}", forms, ["how long", "been"], ["depuis"])
        if r < 0.7 and v.fr in ("dormir", "manger", "travailler", "lire", "nager", "courir"):  # "I haven't slept for two days."
            hasnt = "hasn't" if p.en_slot == 2 else "haven't"
            return inst(f"since|neg|{p.fr}|{v.fr}|{fr_t}", [(f"{p.en} {hasnt} {v.en_participle} {en_t}.", f"{p.fr} n'{FR_AVOIR[p.fr_slot]} pas {v.participle} depuis {fr_t}.")],
                        [hasnt], ["depuis"])
        return inst(f"since|{p.fr}|{v.fr}|{fr_t}", [(f"{p.en} {has} been {v.en_ing()} {en_t}.", f"{p.fr} {v.present[p.fr_slot]} depuis {fr_t}.")], [has, "been"], ["depuis"])

    # il y a (ago) <-> ago; il y a (there is) <-> there is / are
    def f_ago(self) -> Instance:
        p, v = self.pick(SUBJECTS[2:]), V[self.pick(EVENTS)]
        en_d, fr_d = self.pick(AGO)
        aux = (FR_ETRE if v.etre else FR_AVOIR)[p.fr_slot]
        if p.fr == "on" and v.etre:
            p = WE
            aux = FR_ETRE[3]
        if self.rng.random() < 0.3:
            forms = [(f"Did {p.en} {v.en} {en_d} ago?", f) for f in question_forms(p, aux, f"{v.fr_participle(p)} il y a {fr_d}")]
            return inst(f"ago|q|{p.fr}|{v.fr}|{fr_d}", forms, ["ago"], ["il y a"])
        return inst(f"ago|{p.fr}|{v.fr}|{fr_d}", [(f"{p.en} {v.past} {en_d} ago.", f"{p.fr} {aux} {v.fr_participle(p)} il y a {fr_d}.")], ["ago"], ["il y a"])

    def f_there_is(self) -> Instance | None:
        thing = self.noun("animal", "object", "food", "thing", "clothing")
        place = self.pick(self.places) if self.places else None
        if not thing or not place or thing == place:
            return None
        number = "p" if thing.countable and self.rng.random() < 0.35 else "s"
        what = self.noun_phrase(thing, "a" if thing.countable else "some", number)
        where = self.noun_phrase(place, "the")
        if not what or not where:
            return None
        prep_en, prep_fr = ("in", "dans") if place.en in ROOMS else self.pick([("on", "sur"), ("under", "sous"), ("near", "près de")])
        be = "are" if number == "p" else "is"
        en_what = what[0] if number == "s" or what[0].startswith("some") else what[0]
        fr_what = what[1]
        key = f"there|{thing.en}|{number}|{place.en}"
        form = self.rng.random()
        if form < 0.2:
            fr_neg = "de " + " ".join(fr_what.split()[1:]) if fr_what.split()[0] in ("un", "une", "des", "du") else "de " + fr_what.split("'", 1)[-1]
            return inst(key + "|neg", [(f"There {be} no {en_what.split(' ', 1)[-1] if en_what.split()[0] in ('a', 'an', 'some') else en_what} {prep_en} {where[0]}.",
                                        f"Il n'y a pas {fr_neg} {prep_fr} {where[1]}.")], ["there"], ["il n'y a pas"])
        if form < 0.45:
            en_any = "any " + en_what.removeprefix("some ") if en_what.startswith("some ") else en_what
            forms = [(f"{be} there {en_any} {prep_en} {where[0]}?", f) for f in (f"est-ce qu'il y a {fr_what} {prep_fr} {where[1]} ?", f"y a-t-il {fr_what} {prep_fr} {where[1]} ?",
                                                                                f"il y a {fr_what} {prep_fr} {where[1]} ?")]
            return inst(key + "|q", forms, ["there"], ["y a"])
        return inst(key, [(f"There {be} {en_what} {prep_en} {where[0]}.", f"Il y a {fr_what} {prep_fr} {where[1]}.")], ["there"], ["il y a"])

    # venir de <-> have just
    def f_just(self) -> Instance:
        p, v = self.pick(SUBJECTS), V[self.pick(EVENTS)]
        has = "has" if p.en_slot == 2 else "have"
        if self.rng.random() < 0.2:
            return inst(f"just|past|{p.fr}|{v.fr}", [(f"{p.en} had just {v.en_participle}.", f"{p.fr} ven{FR_IMPARFAIT[p.fr_slot]} de {v.fr}.")], ["had just"],
                        [f"ven{FR_IMPARFAIT[p.fr_slot]}"])
        return inst(f"just|{p.fr}|{v.fr}", [(f"{p.en} {has} just {v.en_participle}.", f"{p.fr} {FR_VENIR[p.fr_slot]} de {v.fr}.")], ["just"], [FR_VENIR[p.fr_slot]])

    # aller + infinitive <-> be going to
    def f_going(self) -> Instance:
        p, v = self.pick(SUBJECTS), V[self.pick(GOING)]
        be = EN_BE[p.en_slot] if p.en != "I" else "am"
        en_w, fr_w = self.pick([("tomorrow", "demain"), ("tonight", "ce soir"), ("soon", "bientôt"), ("this afternoon", "cet après-midi"), ("", ""), ("", "")])
        al = FR_ALLER[p.fr_slot]
        key = f"going|{p.fr}|{v.fr}|{fr_w}"
        if self.rng.random() < 0.3:
            forms = [(f"{be} {p.en} going to {v.en} {en_w}?", f) for f in question_forms(p, al, f"{v.fr} {fr_w}")]
            return inst(key + "|q", forms, ["going to"], [al])
        if self.rng.random() < 0.2:
            return inst(key + "|neg", [(f"{p.en} {be} not going to {v.en} {en_w}.", f"{p.fr} ne {al} pas {v.fr} {fr_w}.")], ["not going to"], [al, "pas"])
        return inst(key, [(f"{p.en} {be} going to {v.en} {en_w}.", f"{p.fr} {al} {v.fr} {fr_w}.")], ["going to"], [al])

    # on <-> we / people
    def f_on(self) -> Instance:
        r = self.rng.random()
        if r < 0.4:
            place_en, place_fr = self.pick([("to the cinema", "au cinéma"), ("to the beach", "à la plage"), ("to the restaurant", "au restaurant"), ("to the market", "au marché"),
                                            ("to the park", "au parc"), ("to the swimming pool", "à la piscine"), ("to the museum", "au musée"), ("to my parents'", "chez mes parents")])
            en_w, fr_w = self.pick([("tonight", "ce soir"), ("tomorrow", "demain"), ("on Saturday", "samedi"), ("this afternoon", "cet après-midi")])
            tail = self.pick([("", ""), (", do you want to come?", ", tu veux venir ?"), (", would you like to come?", ", vous voulez venir ?")])
            return inst(f"on|go|{place_fr}|{fr_w}|{tail[1]}", [(f"We are going {place_en} {en_w}{tail[0]}", f"On va {place_fr} {fr_w}{tail[1]}" + ("." if not tail[1] else ""))],
                        ["we"], ["on va/allons"])
        if r < 0.6:
            en, fr = self.pick([("What are we eating?", "On mange quoi ?"), ("What are we doing tonight?", "On fait quoi ce soir ?"), ("Shall we go?", "On y va ?"),
                                ("Where are we meeting?", "On se retrouve où ?"), ("Shall we take the bus?", "On prend le bus ?"), ("What time are we leaving?", "On part à quelle heure ?")])
            state_en, state_fr = self.pick([("", ""), ("I'm hungry, ", "j'ai faim, "), ("I'm thirsty, ", "j'ai soif, "), ("I'm cold, ", "j'ai froid, ")])
            return inst(f"on|q|{fr}|{state_fr}", [(state_en + en[0].lower() + en[1:] if state_en else en, state_fr + fr[0].lower() + fr[1:] if state_fr else fr)], ["we"], ["on"])
        en, fr = self.pick([("People say it will rain.", "On dit qu'il va pleuvoir."), ("You can't smoke here.", "On ne peut pas fumer ici."),
                            ("We are late.", "On est en retard."), ("We'll see.", "On verra."), ("We have time.", "On a le temps."),
                            ("We don't know yet.", "On ne sait pas encore."), ("People eat late in Spain.", "On mange tard en Espagne.")])
        return inst(f"on|{fr}", [(en, fr)], [], ["on"])

    # questions: do-support <-> est-ce que / inversion / intonation; question words
    def f_question(self) -> Instance | None:
        p = self.pick([YOU, YOU, YOU_PL, HE, SHE, THEY, *PEOPLE[1::4]])
        r = self.rng.random()
        do = "does" if p.en_slot == 2 else "do"
        if r < 0.35:
            n = self.noun("food", "animal")
            phrase = n and self.noun_phrase(n, "the", "s" if not n.countable or n.category == "food" else "p")
            if n is None or not phrase:
                return None
            v = V[self.pick(["aimer", "manger", "acheter"])]
            en_np = phrase[0].removeprefix("the ") if v.en in ("like", "eat", "buy") else phrase[0]
            if v.en != "like":
                some = self.noun_phrase(n, "some", "s" if not n.countable else "p")
                if not some:
                    return None
                en_np, fr_np = some[0] if some[0].startswith("some") else some[0], some[1]
                en_np = en_np.removeprefix("some ")
            else:
                fr_np = phrase[1]
            forms = [(f"{do} {p.en} {v.en} {en_np}?", f) for f in question_forms(p, v.present[p.fr_slot], fr_np)]
            return inst(f"q|yesno|{p.fr}|{v.fr}|{n.en}", forms, [do], [])
        if r < 0.7:
            word_en, word_fr, v, rest_en, rest_fr = self.pick([
                ("where", "où", "habiter", "", ""), ("where", "où", "travailler", "", ""), ("when", "quand", "partir", "", ""),
                ("when", "quand", "arriver", "", ""), ("what time", "à quelle heure", "commencer", "", ""), ("what time", "à quelle heure", "finir", "", ""),
                ("why", "pourquoi", "partir", "", ""), ("how", "comment", "venir", "", ""), ("where", "où", "acheter", "your bread", "ton pain"),
                ("what time", "à quelle heure", "manger", "", ""), ("how many times a week", "combien de fois par semaine", "nager", "", ""),
            ])  # fmt: skip
            verb = V[v]
            if rest_fr == "ton pain" and p.fr != "tu":
                return None
            en_verb = verb.en
            en_rest = (" " + rest_en if rest_en else "") + (" in the morning" if word_fr == "à quelle heure" and verb.fr in ("commencer", "partir") else "")
            fr_rest = rest_fr + (" le matin" if word_fr == "à quelle heure" and verb.fr in ("commencer", "partir") else "")
            if verb.fr == "venir":
                en_rest, fr_rest, en_verb = " here", "ici", "get"
            forms = [(f"{word_en} {do} {p.en} {en_verb}{en_rest}?", f) for f in question_forms(p, verb.present[p.fr_slot], fr_rest, word_fr)]
            words_fr = {"what time": ["quelle heure"], "how many times a week": ["combien"]}.get(word_en, [word_fr])
            return inst(f"q|wh|{p.fr}|{word_fr}|{verb.fr}", forms, [word_en, do], words_fr)
        place_en, place_fr, gender = self.pick([("shop", "magasin", "m"), ("bakery", "boulangerie", "f"), ("chemist's", "pharmacie", "f"), ("museum", "musée", "m"),
                                                ("bank", "banque", "f"), ("library", "bibliothèque", "f"), ("supermarket", "supermarché", "m"), ("post office", "poste", "f"),
                                                ("swimming pool", "piscine", "f"), ("restaurant", "restaurant", "m")])
        v = V[self.pick(["fermer", "ouvrir"])]
        when_en, when_fr = self.pick([("on Saturdays", "le samedi"), ("on Sundays", "le dimanche"), ("today", "aujourd'hui"), ("tomorrow", "demain"), ("", ""), ("in the evening", "le soir")])
        subj = Person(f"the {place_en}", f"{'le' if gender == 'm' else 'la'} {place_fr}", 2, 2, gender)
        forms = [(f"What time does the {place_en} {v.en} {when_en}?", f) for f in question_forms(subj, v.present[2], when_fr, "à quelle heure")]
        forms.append((forms[0][0], f"{subj.fr} {v.present[2]} à quelle heure {when_fr} ?"))
        return inst(f"q|shop|{place_fr}|{v.fr}|{when_fr}", forms, ["what time", v.en + "*"], ["quelle heure", v.present[2][:-1] + "*"])

    # ne ... pas / jamais / plus / rien / personne
    def f_negation(self) -> Instance | None:
        p = self.pick(SUBJECTS)
        do = "doesn't" if p.en_slot == 2 else "don't"
        r = self.rng.random()
        if r < 0.45:
            v = V[self.pick(["fumer", "travailler", "dormir", "nager", "conduire", "cuisiner", "courir", "lire", "boire", "pleurer"])]
            adv_fr, adv_en, word_en = self.pick([("pas", "{do} {v}", "not/don't/doesn't"), ("jamais", "never {v3}", "never"), ("plus", "{do} {v} any more", "any more/anymore/no longer"),
                                                 ("pas souvent", "{do} {v} often", "often"), ("jamais le dimanche", "never {v3} on Sundays", "never")])
            en = adv_en.format(do=do, v=v.en, v3=v.en_present(p.en_slot))
            return inst(f"neg|{p.fr}|{v.fr}|{adv_fr}", [(f"{p.en} {en}.", f"{p.fr} ne {v.present[p.fr_slot]} {adv_fr}.")], [word_en], ["ne*/n'*", adv_fr.split()[0]])
        if r < 0.7:
            v = V[self.pick(["voir", "manger", "comprendre", "acheter", "faire", "boire"])]
            return inst(f"neg|{p.fr}|{v.fr}|rien", [(f"{p.en} {do} {v.en} anything.", f"{p.fr} ne {v.present[p.fr_slot]} rien.")], ["anything"], ["rien"])
        if r < 0.85:
            v = V[self.pick(["voir", "connaître", "attendre", "comprendre"])]
            return inst(f"neg|{p.fr}|{v.fr}|personne", [(f"{p.en} {do} {v.en} anybody.", f"{p.fr} ne {v.present[p.fr_slot]} personne.")], ["anybody/anyone"], ["personne"])
        en, fr = self.pick([("There is nobody here.", "Il n'y a personne ici."), ("Nobody knows.", "Personne ne sait."), ("Nothing works.", "Rien ne marche."),
                            ("There is nothing in the fridge.", "Il n'y a rien dans le frigo."), ("Nobody called.", "Personne n'a appelé."),
                            ("I have never been to Japan.", "Je ne suis jamais allé au Japon."), ("It doesn't matter.", "Ça ne fait rien.")])
        return inst(f"neg|set|{fr}", [(en, fr)], [], [])

    # passé composé / imparfait <-> simple past, present perfect, past progressive, used to
    def f_past(self) -> Instance:
        p, v = self.pick(SUBJECTS), V[self.pick(ACTIVITIES)]
        q, w = self.pick([s for s in SUBJECTS if s.en != p.en]), V[self.pick(["téléphoner", "arriver", "rentrer", "partir", "sortir"])]
        if q.fr == "on" and w.etre:
            q = WE
        r = self.rng.random()
        was = EN_WAS[p.en_slot]
        if r < 0.4:  # "I was sleeping when he called."
            aux = (FR_ETRE if w.etre else FR_AVOIR)[q.fr_slot]
            en_w = "phoned" if w.fr == "téléphoner" else w.past
            return inst(f"past|when|{p.fr}|{v.fr}|{q.fr}|{w.fr}", [(f"{p.en} {was} {v.en_ing()} when {q.en} {en_w}.", f"{p.fr} {v.imparfait(p.fr_slot)} quand {q.fr} {aux} {w.fr_participle(q)}.")],
                        [was, v.en_ing()], [v.imparfait(p.fr_slot)])
        if r < 0.6:  # "When I was little, I used to play football."
            en_age, fr_age = self.pick([("little", "petit"), ("a child", "enfant"), ("young", "jeune"), ("a student", "étudiant")])
            fr_age = fr_age + ("e" if p.gender == "f" and fr_age in ("petit", "étudiant") else "") + ("s" if p.plural and fr_age != "enfant" and p.fr != "on" else "")
            if p.plural and fr_age == "enfant":
                en_age, fr_age = "children", "enfants"
            if p.plural and en_age in ("a student",):
                en_age = "students"
            etais = "ét" + FR_IMPARFAIT[p.fr_slot]
            again_en = p.en if p.fr in PRONOUNS else "she" if p.gender == "f" else "he"  # "When Marie was little, she ..."
            return inst(f"past|used|{p.fr}|{v.fr}|{fr_age}", [(f"When {p.en} {was} {en_age}, {again_en} used to {v.en} a lot.",
                                                              f"Quand {p.fr} {etais} {fr_age}, {p.pronoun} {v.imparfait(p.fr_slot)} beaucoup.")],
                        ["used to"], [v.imparfait(p.fr_slot)])
        aux = (FR_ETRE if v.etre else FR_AVOIR)[p.fr_slot]
        if r < 0.8:  # "Have you ever ...?"
            q2 = self.pick([YOU, YOU_PL])
            forms = [(f"Have you ever {v.en_participle} at night?", f) for f in question_forms(q2, FR_AVOIR[q2.fr_slot], f"déjà {v.participle} la nuit")]
            return inst(f"past|ever|{q2.fr}|{v.fr}", forms, ["ever"], ["déjà"])
        en_w, fr_w = self.pick([("yesterday", "hier"), ("last night", "hier soir"), ("on Sunday", "dimanche"), ("all day", "toute la journée"), ("this morning", "ce matin")])
        return inst(f"past|pc|{p.fr}|{v.fr}|{fr_w}", [(f"{p.en} {v.past} {en_w}.", f"{p.fr} {aux} {v.fr_participle(p)} {fr_w}.")], [v.past], [v.participle + "*"])

    # reflexive verbs
    def f_reflexive(self) -> Instance:
        REFL = [("get up", "got up", "lever", "lève", "levé"), ("go to bed", "went to bed", "coucher", "couche", "couché"), ("wake up", "woke up", "réveiller", "réveille", "réveillé"),
                ("get dressed", "got dressed", "habiller", "habille", "habillé"), ("have a shower", "had a shower", "doucher", "douche", "douché"),
                ("have a rest", "had a rest", "reposer", "repose", "reposé")]  # fmt: skip
        p = self.pick(SUBJECTS)
        en_base, en_past, inf, stem3, pp = self.pick(REFL)
        refl = ("me", "te", "se", "nous", "vous", "se")[p.fr_slot]
        fr_pres = {0: stem3, 1: stem3 + "s", 2: stem3, 3: stem3[:-1] + "ons", 4: stem3[:-1] + "ez", 5: stem3 + "nt"}[p.fr_slot]
        fr_pres = fr_pres.replace("lèvons", "levons").replace("lèvez", "levez")
        en_t, fr_t = self.pick([("at seven o'clock", "à sept heures"), ("early", "tôt"), ("late", "tard"), ("at half past six", "à six heures et demie"), ("at eleven o'clock", "à onze heures")])
        if self.rng.random() < 0.4:
            fr_pp = pp + ("e" if p.gender == "f" else "") + ("s" if p.plural and p.fr != "on" else "")
            return inst(f"refl|pc|{p.fr}|{inf}|{fr_t}", [(f"{p.en} {en_past} {en_t}.", f"{p.fr} {refl} {FR_ETRE[p.fr_slot]} {fr_pp} {fr_t}.")], [en_past.split()[0]], [pp + "*"])
        en_v = en_base if p.en_slot < 2 else en_base.split()[0] + ("s" if not en_base.startswith(("go ", "have ")) else "") + " " + " ".join(en_base.split()[1:])
        en_v = en_v.replace("go to", "goes to").replace("gos to", "goes to").replace("have a", "has a") if p.en_slot == 2 else en_v
        return inst(f"refl|{p.fr}|{inf}|{fr_t}", [(f"{p.en} {en_v} {en_t}.", f"{p.fr} {refl} {fr_pres} {fr_t}.")], [en_base.split()[-1]],
                    [f"{stem3[:-1]}*/{pp[:-1]}*"])

    def f_name(self) -> Instance:
        name, _ = self.pick(NAMES)
        r = self.rng.random()
        if r < 0.5:
            return inst(f"name|{name}", [(f"My name is {name}.", f"Je m'appelle {name}.")], ["name", name], ["appelle", name])
        p = self.pick([YOU, YOU_PL])
        forms = [("What is your name?", "Comment tu t'appelles ?"), ("What is your name?", "Comment t'appelles-tu ?")] if p == YOU else [("What is your name?", "Comment vous appelez-vous ?")]
        return inst(f"name|q|{p.fr}", forms, ["name"], ["appel*"])

    # the time, ages, prices, dates
    def f_numbers(self) -> Instance:
        r = self.rng.random()
        h = self.rng.randint(1, 11)
        if r < 0.3:
            m_en, m_fr = self.pick([("", ""), ("half past ", " et demie"), ("quarter past ", " et quart"), ("quarter to ", " moins le quart"), ("ten past ", " dix"), ("twenty to ", " moins vingt")])
            hour_fr = hours_fr(h)
            en = f"It is {m_en}{NUM_EN[h]}" + (" o'clock" if not m_en else "") + "."
            fr = f"Il est {hour_fr}{m_fr}."
            if self.rng.random() < 0.3:
                return inst(f"time|q|{h}|{m_fr}", [("What time is it? " + en, "Quelle heure est-il ? " + fr)], ["what time"], ["quelle heure"])
            return inst(f"time|{h}|{m_fr}", [(en, fr)], [NUM_EN[h]], [NUM_FR[h].replace("un", "une")])
        if r < 0.55:
            age = self.rng.choice([*range(2, 20), 25, 30, 35, 40, 45, 50, 60, 70, 80])
            name, g = self.pick(NAMES)
            p = self.pick([ME, HE, SHE, Person(name, name, 2, 2, g)])
            be = "am" if p.en == "I" else "is"
            en_age, fr_age = (NUM_EN[age], NUM_FR[age]) if age <= 20 else (str(age), str(age))
            if self.rng.random() < 0.3:
                q = self.pick([YOU, YOU_PL])
                forms = [("How old are you?", f) for f in question_forms(q, FR_AVOIR[q.fr_slot], "", "quel âge")]
                return inst(f"age|q|{q.fr}", forms, ["how old"], ["âge"])
            return inst(f"age|{p.fr}|{age}", [(f"{p.en} {be} {en_age} years old.", f"{p.fr} {FR_AVOIR[p.fr_slot]} {fr_age} ans.")], ["years old"], ["ans"])
        if r < 0.8:
            price = self.rng.choice([2, 3, 5, 8, 10, 12, 15, 20, 25, 30, 50, 100])
            cents = self.pick(["", "", ",50"])
            item = self.noun("food", "clothing", "object")
            phrase = item and self.noun_phrase(item, "this")
            if item is None or not phrase:
                return inst(f"price|{price}{cents}", [(f"It costs {price}{cents.replace(',', '.')} euros.", f"Ça coûte {price}{cents} euros.")], ["cost*"], ["coûte"])
            if self.rng.random() < 0.5:
                return inst(f"price|q|{item.en}", [(f"How much is {phrase[0]}?", f"Combien coûte {phrase[1]} ?"), (f"How much is {phrase[0]}?", f"C'est combien, {phrase[1]} ?")],
                            ["how much"], ["combien"])
            cap = phrase[1][0].upper() + phrase[1][1:]
            return inst(f"price|{item.en}|{price}{cents}", [(f"{phrase[0]} costs {price}{cents.replace(',', '.')} euros.", f"{cap} coûte {price}{cents} euros.")], ["costs"], ["coûte"])
        day = self.rng.randint(2, 28)
        m_en, m_fr = self.pick(MONTHS)
        what_en, what_fr = self.pick([("My birthday", "Mon anniversaire"), ("The party", "La fête"), ("The exam", "L'examen"), ("The wedding", "Le mariage"), ("Her birthday", "Son anniversaire")])
        return inst(f"date|{what_fr}|{day}|{m_fr}", [(f"{what_en} is on {day} {m_en}.", f"{what_fr} est le {day} {m_fr}.")], [m_en], ["le", m_fr])

    # shops, transport, restaurant, doctor, phone, directions
    def f_exchange(self) -> Instance | None:
        r = self.rng.random()
        vous = self.rng.random() < 0.6
        if r < 0.2:  # asking permission in a shop
            can_en, can_fr = self.pick([("pay by card", "payer par carte"), ("pay in cash", "payer en espèces"), ("try it on", "l'essayer"), ("sit here", "m'asseoir ici"),
                                        ("open the window", "ouvrir la fenêtre"), ("leave my bag here", "laisser mon sac ici"), ("have the bill", "avoir l'addition"),
                                        ("come in", "entrer"), ("park here", "me garer ici"), ("use your phone", "utiliser votre téléphone")])
            (lead_en, lead_fr), please = self.pick(LEADS), self.pick(["", ", please"])
            s_il = ", s'il vous plaît" if please else ""
            forms = [(f"{lead_en}{'c' if lead_en else 'C'}an I {can_en}{please}?", f"{lead_fr}{f}{s_il} ?")
                     for f in (f"est-ce que je peux {can_fr}", f"je peux {can_fr}", f"puis-je {can_fr}")]
            return inst(f"ex|can|{can_fr}|{lead_fr}|{please}", forms, ["can I"], ["peux/puis"])
        if r < 0.35:  # "Can you help me?"
            p = YOU_PL if vous else YOU
            act_en, act_fr = self.pick([("help me", "m'aider"), ("call me back", "me rappeler"), ("repeat", "répéter"), ("speak more slowly", "parler plus lentement"),
                                        ("close the door", "fermer la porte"), ("wait a minute", "attendre une minute"), ("show me the way", "m'indiquer le chemin")])
            lead_en, lead_fr = self.pick(LEADS)
            lead_fr = lead_fr.replace("Excusez-moi", "Excuse-moi") if p == YOU else lead_fr
            forms = [(f"{lead_en}{'c' if lead_en else 'C'}an you {act_en}?", lead_fr + f) for f in question_forms(p, FR_POUVOIR[p.fr_slot], act_fr)]
            return inst(f"ex|canyou|{p.fr}|{act_fr}|{lead_fr}", forms, ["can you"], [FR_POUVOIR[p.fr_slot]])
        if r < 0.5:  # the phone
            n = self.rng.choice([2, 5, 10, 15, 20])
            te, you = ("vous", "you") if vous else ("te", "you")
            en, fr = self.pick([(f"I'll call {you} back in {NUM_EN[n]} minutes.", f"Je {te} rappelle dans {NUM_FR[n]} minutes."),
                                (f"I'll call {you} back in {NUM_EN[n]} minutes.", f"Je {te} rappelle d'ici {NUM_FR[n]} minutes."),
                                (f"I'll be there in {NUM_EN[n]} minutes.", f"J'arrive dans {NUM_FR[n]} minutes."),
                                (f"The train leaves in {NUM_EN[n]} minutes.", f"Le train part dans {NUM_FR[n]} minutes.")])
            return inst(f"ex|phone|{fr}", [(en, fr)], ["in", NUM_EN[n]], ["dans/d'ici", NUM_FR[n]])
        if r < 0.7:  # directions
            turn_en, turn_fr = self.pick([("left", "à gauche"), ("right", "à droite")])
            at_en, at_fr = self.pick([("at the traffic lights", "au feu"), ("after the bridge", "après le pont"), ("at the church", "à l'église"),
                                      ("at the second street", "à la deuxième rue"), ("at the roundabout", "au rond-point"), ("after the bakery", "après la boulangerie")])
            verb = "Tournez" if vous else "Tourne"
            then_en, then_fr = self.pick([("", ""), (" and go straight on", " et continuez tout droit" if vous else " et continue tout droit")])
            return inst(f"ex|dir|{turn_fr}|{at_fr}|{vous}|{then_fr}", [(f"Turn {turn_en} {at_en}{then_en}.", f"{verb} {turn_fr} {at_fr}{then_fr}.")], ["turn", turn_en], ["tourne*", turn_fr.split()[1]])
        if r < 0.85:  # restaurant, shop, transport
            en, fr = self.pick([
                ("The bill, please.", "L'addition, s'il vous plaît."), ("A table for two, please.", "Une table pour deux, s'il vous plaît."),
                ("I would like a single ticket to Lyon.", "Je voudrais un aller simple pour Lyon."), ("A return ticket to Nantes, please.", "Un aller-retour pour Nantes, s'il vous plaît."),
                ("Where is the bus stop?", "Où est l'arrêt de bus ?"), ("Which platform does the train leave from?", "Le train part de quel quai ?"),
                ("Is this seat free?", "Cette place est libre ?"), ("Do you have this in a smaller size?", "Vous avez ça dans une taille plus petite ?"),
                ("I'm just looking, thank you.", "Je regarde seulement, merci."), ("Keep the change.", "Gardez la monnaie."), ("What would you like to drink?", "Qu'est-ce que vous voulez boire ?"),
                ("I'm allergic to nuts.", "Je suis allergique aux noix."), ("Is service included?", "Le service est compris ?"), ("Anything else?", "Et avec ceci ?"),
                ("The train is twenty minutes late.", "Le train a vingt minutes de retard."), ("I missed my bus.", "J'ai raté mon bus."),
            ])  # fmt: skip
            return inst(f"ex|set|{fr}", [(en, fr)])
        en, fr = self.pick([  # at the doctor's
            ("I have had a headache since yesterday.", "J'ai mal à la tête depuis hier."), ("I have had a sore throat for three days.", "J'ai mal à la gorge depuis trois jours."),
            ("My back hurts.", "J'ai mal au dos."), ("Where does it hurt?", "Où avez-vous mal ?"), ("I feel sick.", "J'ai mal au cœur."),
            ("I need an appointment with the doctor.", "J'ai besoin d'un rendez-vous chez le médecin."), ("Take this medicine three times a day.", "Prenez ce médicament trois fois par jour."),
            ("I have had a fever since this morning.", "J'ai de la fièvre depuis ce matin."), ("My son has had a cough for a week.", "Mon fils tousse depuis une semaine."),
        ])  # fmt: skip
        return inst(f"ex|doctor|{fr}", [(en, fr)])

    # il fait beau / froid, il pleut, il y a du vent <-> the weather is nice, it is cold, it is raining, it is windy
    def f_weather(self) -> Instance | None:
        en, fr, en_past, fr_past, graded = self.pick(WEATHER)
        kind = self.pick(["present", "present", "past", "negative", "going", "question", "clause"])
        adv_en, adv_fr = self.pick(WEATHER_ADVERBS) if graded and kind in ("present", "past", "question") else ("", "")
        tail_en, tail_fr = self.pick(WEATHER_TAILS_PAST if kind == "past" else WEATHER_TAILS)
        it_en = en.split(" is ")[0]  # "it", "the weather"
        state_en, state_fr = en.split(" is ", 1)[1], fr.split(" ", 1)[1]  # "cold" / "fait froid", "raining" / "pleut"
        verb_fr, rest_fr = (state_fr.split(" ", 1) + [""])[:2] if " " in state_fr else (state_fr, "")
        rest_fr = (adv_fr + rest_fr).strip() if verb_fr == "fait" else rest_fr  # "il fait très froid"
        group = f"weather|{fr}|{kind}"
        if kind == "present":
            forms = [(f"{it_en} is {adv_en}{state_en}{tail_en}.", f"il {verb_fr} {rest_fr}{tail_fr}.")]
        elif kind == "past":
            past_state_fr = fr_past.split(" ", 1)[1]
            past_verb, _, past_rest = past_state_fr.partition(" ")
            past_rest = (adv_fr + past_rest).strip() if past_verb == "faisait" else past_rest
            forms = [(f"{it_en} was {adv_en}{state_en}{tail_en}.", f"il {past_verb} {past_rest}{tail_fr}.")]
        elif kind == "negative":
            neg_fr = f"il n'y a pas de {rest_fr.split(' ')[-1]}" if verb_fr == "y" else f"il ne {verb_fr} pas {rest_fr}"  # "pas de vent"
            forms = [(f"{it_en} is not {state_en}{tail_en}.", f"{neg_fr}{tail_fr}.")]
        elif kind == "going":
            going_fr = {"pleut": "il va pleuvoir", "neige": "il va neiger"}.get(verb_fr) or (f"il va faire {rest_fr}" if verb_fr == "fait" else f"il va y avoir {rest_fr.split(' ', 1)[1]}")
            going_en = {"raining": "rain", "snowing": "snow"}.get(state_en) or f"be {state_en}"
            forms = [(f"{it_en} is going to {going_en}{tail_en}.", f"{going_fr}{tail_fr}.")]
        elif kind == "question":
            it = Person("it", "il", 2, 2)
            forms = [(f"is {it_en} {adv_en}{state_en}{tail_en}?", f) for f in question_forms(it, verb_fr, f"{rest_fr}{tail_fr}")]
            if it_en == "the weather" and not adv_en and self.rng.random() < 0.5:
                forms = [("What is the weather like" + tail_en + "?", f) for f in (f"quel temps fait-il{tail_fr} ?", f"il fait quel temps{tail_fr} ?")]
                group = "weather|q"
        else:
            if fr not in WEATHER_CLAUSES:
                return None
            clause_en, clause_fr = self.pick(WEATHER_CLAUSES[fr])
            forms = [(f"{it_en} is {state_en}{clause_en}.", f"il {verb_fr} {rest_fr}{clause_fr}.")]
            tail_fr = clause_fr
        key = f"{group}|{adv_fr}|{tail_fr}"
        return inst(key, forms, [], [], group=group)

    # avoir mal à <-> have a headache, my back hurts
    def f_hurt(self) -> Instance | None:
        p = self.pick([ME, ME, ME, YOU, HE, SHE, WE, YOU_PL, *PEOPLE[::5]])
        part = self.pick(HURTS)
        kind = self.pick(["present", "present", "past", "since", "question", "lead"])
        av = FR_AVOIR[p.fr_slot]
        en_have = "have" if p.en_slot < 2 else "has"
        fr_part = part[1]
        if part[2]:  # "a headache": have / had / have had
            en_present, en_past_, en_perfect = f"{p.en} {en_have} {part[0]}", f"{p.en} had {part[0]}", f"{p.en} {en_have} had {part[0]}"
            en_q = f"{'Does' if p.en_slot == 2 else 'Do'} {p.en} have {part[0]}?"
        else:  # "my back hurts": the possessive of the person
            own = {"I": "my", "you": "your", "he": "his", "she": "her", "we": "our"}.get(p.en, f"{p.en}'s")
            plural = part[0].endswith(("s", "feet", "teeth"))
            en_present, en_past_ = f"{own} {part[0]} {'hurt' if plural else 'hurts'}", f"{own} {part[0]} hurt"
            en_perfect = f"{own} {part[0]} {'have' if plural else 'has'} been hurting"
            en_q = f"{'Do' if plural else 'Does'} {own} {part[0]} hurt?"
        t_en, t_fr = self.pick(HURT_SINCE)
        if kind == "present":
            forms = [(f"{en_present}.", f"{p.fr} {av} mal {fr_part}.")]
        elif kind == "past":
            forms = [(f"{en_past_} yesterday.", f"{p.fr} av{FR_IMPARFAIT[p.fr_slot]} mal {fr_part} hier.")]
        elif kind == "since":
            forms = [(f"{en_perfect} {t_en}.", f"{p.fr} {av} mal {fr_part} depuis {t_fr}.")]
        elif kind == "question":
            if p == ME:
                return None
            forms = [(en_q, f) for f in question_forms(p, av, f"mal {fr_part}")]
        else:
            lead_en, lead_fr = self.pick([("Doctor, ", "Docteur, "), ("Oh, ", "Oh, "), ("Sorry, ", "Désolé, ") if p.gender == "m" else ("Sorry, ", "Désolée, "), ("Mum, ", "Maman, ")])
            if p != ME:
                return None
            forms = [(f"{lead_en}{en_present}.", f"{lead_fr}{p.fr} {av} mal {fr_part}.")]
        return inst(f"hurt|{p.fr}|{fr_part}|{kind}|{t_fr if kind == 'since' else ''}|{forms[0][1][:12] if kind == 'lead' else ''}", forms, [], ["mal"])

    # être en retard / en avance / à l'heure <-> be late / early / on time; "dix minutes de retard" <-> "ten minutes late"
    def f_late(self) -> Instance | None:
        p = self.pick([ME, ME, YOU, HE, SHE, WE, YOU_PL, THEY, *PEOPLE[::5], Person("the train", "le train", 2, 2), Person("the bus", "le bus", 2, 2)])
        be, was, etre = EN_BE[p.en_slot] if p.en != "I" else "am", EN_WAS[p.en_slot], FR_ETRE[p.fr_slot]
        en, fr = self.pick([("late", "en retard"), ("late", "en retard"), ("early", "en avance"), ("on time", "à l'heure")])
        kind = self.pick(["present", "past", "negative", "minutes", "sorry", "question"])
        if kind == "present":
            tail_en, tail_fr = self.pick([("", ""), (" again", ""), (" today", " aujourd'hui"), (" this morning", " ce matin")])
            again = "encore " if tail_en == " again" else ""  # "encore en retard"
            forms = [(f"{p.en} {be} {en}{tail_en}.", f"{p.fr} {etre} {again}{fr}{tail_fr}.")]
            kind += tail_en
        elif kind == "past":
            tail_en, tail_fr = self.pick([("", ""), (" yesterday", " hier"), (" this morning", " ce matin")])
            forms = [(f"{p.en} {was} {en}{tail_en}.", f"{p.fr} {FR_ETRE_IMPARFAIT[p.fr_slot]} {fr}{tail_fr}.")]
            kind += tail_fr
        elif kind == "negative":
            forms = [(f"{p.en} {be} not {en}.", f"{p.fr} ne {etre} pas {fr}.")]
        elif kind == "minutes":
            n = self.rng.choice([5, 10, 15, 20])
            forms = [(f"{p.en} {be} {NUM_EN[n]} minutes late.", f"{p.fr} {FR_AVOIR[p.fr_slot]} {NUM_FR[n]} minutes de retard."),
                     (f"{p.en} {be} {NUM_EN[n]} minutes late.", f"{p.fr} {etre} en retard de {NUM_FR[n]} minutes.")]  # fmt: skip
            kind, en, fr = kind + str(n), "late", "retard"
        elif kind == "sorry":
            if p != ME:
                return None
            forms = [("Sorry, I am late.", "Désolé, je suis en retard."), ("Sorry, I am late.", "Désolée, je suis en retard."), ("Sorry, I am late.", "Pardon, je suis en retard.")]
            en, fr = "late", "en retard"
        else:
            if p == ME:
                return None
            forms = [(f"{be} {p.en} {en}?", f) for f in question_forms(p, etre, fr)]
        return inst(f"late|{p.fr}|{fr}|{kind}", forms, [en.split()[-1]], [fr.split()[-1]])

    # quel âge ..., quelle heure est-il, d'où viens-tu <-> how old ..., what time is it, where are you from
    def f_ask(self) -> Instance | None:
        r = self.rng.random()
        lead_en, lead_fr = self.pick([("", ""), ("", ""), ("Excuse me, ", "Excusez-moi, "), ("Sorry, ", "Pardon, "), ("And ", "Et ")])
        if r < 0.45:  # age
            who_en, who_fr, tu = self.pick(ASK_WHO)
            lead_fr = lead_fr.replace("Excusez-moi", "Excuse-moi") if tu else lead_fr
            if who_fr in ("tu", "vous"):
                p = YOU if who_fr == "tu" else YOU_PL
                forms = [(f"{lead_en}how old are you?", lead_fr + f) for f in question_forms(p, FR_AVOIR[p.fr_slot], "", "quel âge")]
                forms.append((forms[0][0], f"{lead_fr}{p.fr} {FR_AVOIR[p.fr_slot]} quel âge ?"))
            else:
                plural = who_en.endswith(("children", "parents"))
                forms = [(f"{lead_en}how old {'are' if plural else 'is'} {who_en}?", f"{lead_fr}quel âge {'ont' if plural else 'a'} {who_fr} ?"),
                         (f"{lead_en}how old {'are' if plural else 'is'} {who_en}?", f"{lead_fr}{who_fr} {'ont' if plural else 'a'} quel âge ?")]  # fmt: skip
            return inst(f"ask|age|{who_fr}|{lead_fr}", forms, ["how old"], ["âge"])
        if r < 0.75:  # the time
            where_en, where_fr = self.pick([("", ""), ("", ""), (" in London", " à Londres"), (" in Montreal", " à Montréal"), (" in Tokyo", " à Tokyo"), (" now", " maintenant")])
            forms = [(f"{lead_en}what time is it{where_en}?", f"{lead_fr}quelle heure est-il{where_fr} ?"), (f"{lead_en}what time is it{where_en}?", f"{lead_fr}il est quelle heure{where_fr} ?")]
            if not where_en:
                forms.append((f"{lead_en}do you have the time?", f"{lead_fr}vous avez l'heure ?"))
            return inst(f"ask|time|{where_fr}|{lead_fr}", forms[:2], ["what time"], ["heure"]) if where_en else inst(f"ask|time|{lead_fr}", forms, ["time"], ["heure"])
        p = self.pick([YOU, YOU_PL, HE, SHE])  # where from
        v = FR_VENIR[p.fr_slot]
        lead_fr = lead_fr.replace("Excusez-moi", "Excuse-moi") if p == YOU else lead_fr
        if self.rng.random() < 0.5:
            be = "are" if p.en == "you" else "is"
            forms = [(f"{lead_en}where {be} {p.en} from?", lead_fr + f) for f in question_forms(p, v, "", "d'où")]
            forms.append((forms[0][0], f"{lead_fr}{p.fr} {v} d'où ?"))
            return inst(f"ask|from|{p.fr}|{lead_fr}", forms, ["where", "from"], ["d'où"])
        city = self.pick(["Lyon", "Paris", "Nantes", "Marseille", "Bordeaux", "Lille", "Toulouse", "Rennes", "Nice", "Strasbourg"])
        q = self.pick([ME, ME, HE, SHE, WE])
        be = "am" if q == ME else EN_BE[q.en_slot]
        return inst(f"ask|city|{q.fr}|{city}", [(f"{q.en} {be} from {city}.", f"{q.fr} {FR_VENIR[q.fr_slot]} de {city}.")], ["from", city], [city])

    # je m'appelle / il s'appelle <-> my name is / his name is, in a sentence of introduction
    def f_intro(self) -> Instance | None:
        name, gender = self.pick(NAMES)
        lead_en, lead_fr = self.pick([("", ""), ("Hello, ", "Bonjour, "), ("Hi, ", "Salut, "), ("Good evening, ", "Bonsoir, ")])
        r = self.rng.random()
        if r < 0.4:
            city_en, city = self.pick([("Lyon", "Lyon"), ("Nantes", "Nantes"), ("Marseille", "Marseille"), ("Bordeaux", "Bordeaux"), ("Lille", "Lille"),
                                       ("Toulouse", "Toulouse"), ("Rennes", "Rennes"), ("Montreal", "Montréal"), ("Brussels", "Bruxelles"), ("Geneva", "Genève")])  # fmt: skip
            tail_en, tail_fr = self.pick([("", ""), (f" and I live in {city_en}", f" et j'habite à {city}"), (f" and I am from {city_en}", f" et je viens de {city}"),
                                          (" and I am a teacher", " et je suis professeur"), (" and I am a student", " et je suis étudiant" if gender == "m" else " et je suis étudiante"),
                                          (" and I work here", " et je travaille ici")])  # fmt: skip
            if not (lead_en or tail_en):
                return None  # the plain instance (f_name)
            forms = [(f"{lead_en}my name is {name}{tail_en}.", f"{lead_fr}je m'appelle {name}{tail_fr}.")]
            return inst(f"intro|me|{name}|{lead_fr}|{tail_fr}", forms, ["name", name], ["appelle", name], group=f"name|{name}")
        if r < 0.75:
            who_en, who_fr, who_gender = self.pick([("his", "il", "m"), ("her", "elle", "f"), ("my brother's", "mon frère", "m"), ("my sister's", "ma sœur", "f"),
                                                    ("my son's", "mon fils", "m"), ("my daughter's", "ma fille", "f"), ("my friend's", "mon ami", "m"),
                                                    ("my friend's", "mon amie", "f"), ("our teacher's", "notre professeur", "")])  # fmt: skip
            if who_gender and who_gender != gender:
                return None
            forms = [(f"{lead_en}{who_en} name is {name}.", f"{lead_fr}{who_fr} s'appelle {name}.")]
            return inst(f"intro|{who_fr}|{name}|{lead_fr}", forms, ["name", name], ["appelle", name])
        if r < 0.9:
            p = self.pick([YOU, YOU_PL])
            forms = ([("Nice to meet you.", "Enchanté."), ("Nice to meet you.", "Enchantée."), ("Nice to meet you.", "Ravi de te rencontrer.")] if p == YOU
                     else [("Nice to meet you.", "Ravi de vous rencontrer."), ("Nice to meet you.", "Enchanté de faire votre connaissance.")])  # fmt: skip
            return inst(f"intro|meet|{p.fr}", forms, ["meet"], [])
        forms = [(f"{lead_en}I am {name}, nice to meet you.", f"{lead_fr}je suis {name}, enchanté." if gender == "m" else f"{lead_fr}je suis {name}, enchantée.")]
        return inst(f"intro|am|{name}|{lead_fr}", forms, [name], [name])

    # joyeux anniversaire, bonne année, bon appétit ... <-> happy birthday, happy new year, enjoy your meal ...
    def f_wish(self) -> Instance | None:
        en, fr = self.pick(WISHES)
        r = self.rng.random()
        if r < 0.45:
            return inst(f"wish|{fr}", [(f"{en}!", f"{fr} !")], [], [])
        if r < 0.75:
            name, _ = self.pick(NAMES)
            return inst(f"wish|{fr}|{name}", [(f"{en}, {name}!", f"{fr}, {name} !")], [name], [name])
        if r < 0.9:
            to_en, to_fr = self.pick([("Thank you, you too!", "Merci, toi aussi !"), ("Thank you, you too!", "Merci, vous aussi !"), ("Thanks, same to you!", "Merci, à toi aussi !")])
            return inst(f"wish|{fr}|too|{to_fr}", [(f"{en}! {to_en}", f"{fr} ! {to_fr}")], [], [])
        if not en.startswith("Happy"):
            return None
        p = self.pick([YOU, YOU_PL])
        rest_en, rest_fr = en[6:], fr.split(" ", 1)[1].lower()  # "birthday", "New Year"; "anniversaire"
        art = "une" if fr.startswith("Bonne") else "un"
        adj = fr.split(" ")[0].lower()
        we = self.pick([("I", "Je", "souhaite"), ("We", "Nous", "souhaitons")])
        obj = "te" if p == YOU else "vous"
        return inst(f"wish|{fr}|{p.fr}|{we[1]}", [(f"{we[0]} wish you a happy {rest_en}.", f"{we[1]} {obj} {we[2]} {art} {adj} {rest_fr}.")], [], [])

    # on se retrouve ... <-> let's meet ...; payer par carte <-> pay by card
    def f_meet(self) -> Instance | None:
        r = self.rng.random()
        where_en, where_fr = self.pick([("in front of the station", "devant la gare"), ("at the café", "au café"), ("at my place", "chez moi"), ("at the cinema", "au cinéma"),
                                        ("at the restaurant", "au restaurant"), ("in the park", "au parc"), ("at the entrance", "à l'entrée"), ("at the bus stop", "à l'arrêt de bus")])  # fmt: skip
        when_en, when_fr = self.pick([("", ""), (" at noon", " à midi"), (" at eight", " à huit heures"), (" tomorrow", " demain"), (" tonight", " ce soir"), (" after work", " après le travail")])
        if r < 0.55:
            forms = [(f"Let's meet {where_en}{when_en}.", f"On se retrouve {where_fr}{when_fr}."), (f"Let's meet {where_en}{when_en}.", f"Retrouvons-nous {where_fr}{when_fr}.")]
            return inst(f"meet|{where_fr}|{when_fr}", forms, ["meet"], ["retrouv*"])
        if r < 0.7:
            forms = [(f"Shall we meet {where_en}{when_en}?", f"On se retrouve {where_fr}{when_fr} ?")]
            return inst(f"meet|q|{where_fr}|{when_fr}", forms, ["meet"], ["retrouv*"])
        lead_en, lead_fr = self.pick(LEADS)
        how_en, how_fr = self.pick([("by card", "par carte"), ("by card", "par carte bancaire"), ("in cash", "en espèces"), ("by cheque", "par chèque")])
        if r < 0.9:
            forms = [(f"{lead_en}can I pay {how_en}?", lead_fr + f) for f in question_forms(ME, "peux", f"payer {how_fr}")]
            forms.append((forms[0][0], f"{lead_fr}puis-je payer {how_fr} ?"))
            return inst(f"pay|q|{how_fr}|{lead_fr}", forms, ["pay"], ["pay*"])
        who = self.pick([ME, WE])
        fut = "vais" if who == ME else "allons"
        return inst(f"pay|{who.fr}|{how_fr}", [(f"{who.en} will pay {how_en}.", f"{who.fr} {fut} payer {how_fr}.")], ["pay"], ["payer"])

    SIDE: tuple[tuple[str, float], ...] = (("f_state_more", 6), ("f_weather", 3), ("f_hurt", 2), ("f_late", 1), ("f_ask", 1.5))
    EXTRA: tuple[tuple[str, float], ...] = (("f_intro", 2), ("f_wish", 2), ("f_meet", 1.5))

    FRAMES = (("f_state", 4), ("f_need", 2), ("f_since", 5), ("f_ago", 3), ("f_there_is", 3), ("f_just", 2), ("f_going", 3), ("f_on", 2), ("f_question", 5),
              ("f_negation", 4), ("f_past", 4), ("f_reflexive", 2), ("f_name", 1), ("f_numbers", 3), ("f_exchange", 4))  # fmt: skip

    MORE = 0.22  # the share of draws that go to the frames of ``SIDE``
    MORE_EXTRA = 0.06  # the share of draws that go to the frames of ``EXTRA`` (before the others)

    def draw(self) -> Instance | None:
        """One instance.  The frames of ``EXTRA`` and of ``SIDE`` come from streams of their own, so
        that the others draw the same instances (and held-out splits) with them as without."""
        if self.extra is not None and self.extra.random() < self.MORE_EXTRA:
            return self._draw_from(self.EXTRA, self.extra)
        if self.side.random() < self.MORE:
            return self._draw_from(self.SIDE, self.side)
        return self._draw_from(self.FRAMES, self.rng)

    def _draw_from(self, frames: tuple[tuple[str, float], ...], stream: random.Random) -> Instance | None:
        """One instance of one of ``frames`` (names and weights), every choice made from ``stream``."""
        main, self.rng = self.rng, stream
        try:
            names, weights = zip(*frames)
            method: Callable[[], Instance | None] = getattr(self, self.rng.choices(names, weights)[0])
            return method()
        finally:
            self.rng = main


def bucket(key: str) -> float:
    """Where an instance falls: below HELD_OUT test, below 2 x HELD_OUT valid, else training."""
    return _bucket(key)


def split_of(key: str) -> str:
    b = bucket(key)
    return "test" if b < HELD_OUT else "valid" if b < 2 * HELD_OUT else "train"


EXTRA_KINDS = ("intro", "wish", "meet", "pay")  # the frames of ``Frames.EXTRA`` (instance keys' first field)


def instances(nouns: Sequence[Noun], n: int, seed: int = 0, tries: int = 20) -> Iterator[Instance]:
    """``n`` distinct instances of the frames and the states in context (fewer if they run out of
    new ones), and among them the third stream's (``Frames.EXTRA``), which do not count: the others
    are the same with them as without."""
    frames = Frames(nouns, random.Random(seed), random.Random(f"more|{seed}"), random.Random(f"extra|{seed}"))
    seen: set[str] = set()
    counted = misses = 0
    while counted < n and misses < n * tries:
        i = frames.draw()
        if i is None or i.key in seen:
            misses += i is None or i.frame not in EXTRA_KINDS
            continue
        seen.add(i.key)
        counted += i.frame not in EXTRA_KINDS
        yield i


def corpus_rows(nouns: Sequence[Noun], n: int = SENTENCES, seed: int = 0) -> Iterator[tuple[str, str, str]]:
    """The training rows (source, English, French): every form of every instance not held out, the
    third stream's under ``EXTRA_SOURCE`` (few rows, weighted on their own in training), the others
    under ``SOURCE``; then the hours of the day (``clock_rows``) and the set ways of saying things
    (``set_rows``)."""
    for i in instances(nouns, n, seed):
        if i.split == "train":
            src = EXTRA_SOURCE if i.frame in EXTRA_KINDS else SOURCE
            for en, fr in i.forms:
                yield src, en, fr
    yield from clock_rows()
    yield from set_rows()


# the hours of the day with their part: "huit heures du soir" / "eight o'clock in the evening"
CLOCK_PARTS = [("in the morning", "du matin", range(1, 12)), ("in the afternoon", "de l'après-midi", range(1, 6)), ("in the evening", "du soir", range(5, 12))]
CLOCK_MINUTES = [("{h} o'clock", "{h}"), ("half past {h}", "{h} et demie"), ("quarter past {h}", "{h} et quart"), ("quarter to {h}", "{h} moins le quart")]
CLOCK_SENTENCES = [
    ("It is {t} {p}.", "Il est {t} {p}."), ("It's {t} {p}.", "Il est {t} {p}."), ("The train leaves at {t} {p}.", "Le train part à {t} {p}."),
    ("I get up at {t} {p}.", "Je me lève à {t} {p}."), ("The shop closes at {t} {p}.", "Le magasin ferme à {t} {p}."),
    ("We eat at {t} {p}.", "Nous mangeons à {t} {p}."), ("The meeting is at {t} {p}.", "La réunion est à {t} {p}."),
    ("See you at {t} {p}!", "À {t} {p} !"), ("Is it {t} {p}?", "Est-ce qu'il est {t} {p} ?"),
]  # fmt: skip


def clock_rows() -> Iterator[tuple[str, str, str]]:
    """Every hour of the day with its part, each way of saying its minutes, in each sentence
    (``CLOCK_SOURCE``, English, French): "It is eight o'clock in the evening." / "Il est huit heures
    du soir.".  Their own rows, not a frame: the frames' instances and held-out splits stay as they
    are; the corpus build leaves out any that a committed split holds."""
    for part_en, part_fr, hours in CLOCK_PARTS:
        for h in hours:
            for minutes_en, minutes_fr in CLOCK_MINUTES:
                t_en, t_fr = minutes_en.format(h=NUM_EN[h]), minutes_fr.format(h=hours_fr(h))
                for en, fr in CLOCK_SENTENCES:
                    yield CLOCK_SOURCE, en.format(t=t_en, p=part_en), fr.format(t=t_fr, p=part_fr)


def held_out(nouns: Sequence[Noun], split: str, size: int = SPLIT_SIZE, seed: int = 1, n: int = 60_000) -> list[tuple[Instance, str, str]]:
    """A held-out split: one form of each of ``size`` instances of ``split`` ("valid" or "test"),
    the frames taken in turn (a frame with many instances, such as "there is", does not crowd out
    the others), in the order of their keys' hash."""
    rng = random.Random(seed)
    by_frame: dict[str, list[tuple[Instance, str, str]]] = {}
    for i in instances(nouns, n, seed):
        if i.split == split:
            by_frame.setdefault(i.frame, []).append((i, *rng.choice(i.forms)))
    # (which instances a frame gives, by one hash; their order in the split, by another)
    queues = [sorted(rows, key=lambda r: _bucket("pick|" + r[0].key)) for _, rows in sorted(by_frame.items())]
    seen_en: set[str] = set()
    out: list[tuple[Instance, str, str]] = []
    while len(out) < size and any(queues):
        for q in queues:
            while q and q[0][1] in seen_en:
                q.pop(0)
            if q and len(out) < size:
                seen_en.add(q[0][1])
                out.append(q.pop(0))
    return sorted(out, key=lambda r: _bucket("order|" + r[0].key))


def nouns(lexicon: SentenceLexicon) -> list[Noun]:
    """The lexicon's common nouns learnt both ways (a one-way noun would teach its other direction)."""
    return [n for n in lexicon.common if n.direction == "both"]


def write_splits(nouns: Sequence[Noun], splits_dir: Path, rewrite: bool = False) -> list[Path]:
    """``{valid,test}.conv.en-fr.tsv`` and their words (``{valid,test}.conv.words.tsv``: the frame,
    the English, the words an English and a French translation must hold) where none is committed
    (``rewrite``: over it too); the paths written."""
    written = []
    for split in ("valid", "test"):
        pairs, words = splits_dir / f"{split}.conv.en-fr.tsv", splits_dir / f"{split}.conv.words.tsv"
        if pairs.exists() and words.exists() and not rewrite:
            continue
        rows = held_out(nouns, split)
        pairs.write_text("".join(f"{en}\t{fr}\n" for _, en, fr in rows), encoding="utf-8")
        head = "# frame\tEnglish\tEnglish words\tFrench words (| separates the words a correct translation holds; / separates alternatives; * ends a prefix)\n"
        words.write_text(head + "".join(f"{i.frame}\t{en}\t{'|'.join(i.en_words)}\t{'|'.join(i.fr_words)}\n" for i, en, _ in rows), encoding="utf-8")
        written += [pairs, words]
    return written


# what is said one set way, not word for word: meeting, courtesy, a letter's greeting and closing
SET_PHRASES = [
    ("Nice to meet you.", "Enchanté."), ("Nice to meet you.", "Enchantée."), ("Pleased to meet you.", "Enchanté."),
    ("Pleased to meet you.", "Enchantée."), ("Nice to meet you too.", "Enchanté également."), ("Nice to meet you too.", "Moi de même."),
    ("Nice to meet you.", "Ravi de vous rencontrer."), ("Nice to meet you.", "Ravie de te rencontrer."),
    ("Cheers!", "Santé !"), ("Cheers!", "À votre santé !"), ("Cheers!", "À ta santé !"), ("Bless you!", "À tes souhaits !"),
    ("Bless you!", "À vos souhaits !"), ("You're welcome.", "De rien."), ("You're welcome.", "Je vous en prie."),
    ("Don't worry.", "Ne t'inquiète pas."), ("Don't worry.", "Ne vous inquiétez pas."), ("No problem.", "Pas de problème."),
    ("It doesn't matter.", "Ce n'est pas grave."), ("See you tomorrow!", "À demain !"), ("See you soon!", "À bientôt !"),
    ("See you later!", "À plus tard !"), ("Take care!", "Prends soin de toi !"), ("Take care!", "Prenez soin de vous !"),
    ("I have a headache.", "J'ai mal à la tête."), ("I have a stomach ache.", "J'ai mal au ventre."), ("I have a toothache.", "J'ai mal aux dents."),
    ("I have a sore throat.", "J'ai mal à la gorge."), ("It's raining cats and dogs.", "Il pleut des cordes."),
    ("Dear Sir or Madam,", "Madame, Monsieur,"), ("Dear Sir,", "Monsieur,"), ("Dear Madam,", "Madame,"), ("Dear friends,", "Chers amis,"),
    ("Dear colleagues,", "Chers collègues,"), ("Dear all,", "Bonjour à tous,"), ("Hi everyone,", "Bonjour à tous,"),
    ("Best regards,", "Cordialement,"), ("Kind regards,", "Bien cordialement,"), ("Regards,", "Cordialement,"), ("Best wishes,", "Amitiés,"),
    ("Love,", "Bisous,"), ("See you soon,", "À bientôt,"), ("Thank you for your email.", "Merci pour votre e-mail."),
    ("Thank you for your email.", "Merci pour votre message."), ("Thank you for your letter.", "Merci pour votre lettre."),
    ("Thank you for your reply.", "Merci pour votre réponse."), ("Thank you for your quick reply.", "Merci pour votre réponse rapide."),
    ("Thank you in advance.", "Merci d'avance."), ("Thanks in advance.", "Merci d'avance."), ("Thanks in advance for your help.", "Merci d'avance pour votre aide."),
    ("I hope you are well.", "J'espère que vous allez bien."), ("I hope you are well.", "J'espère que tu vas bien."),
    ("I look forward to hearing from you.", "Dans l'attente de votre réponse."), ("Feel free to contact me.", "N'hésitez pas à me contacter."),
    ("Do not hesitate to contact me if you have any questions.", "N'hésitez pas à me contacter si vous avez des questions."),
]  # fmt: skip
# small talk: greeting, asking after someone, wishing, paying, finding one's way, agreeing
SET_SMALL_TALK = [
    ("How are you?", "Ça va ?"), ("How are you?", "Comment ça va ?"), ("How are you?", "Comment allez-vous ?"), ("How are you doing?", "Comment vas-tu ?"),
    ("How's it going?", "Ça va ?"), ("Are you OK?", "Ça va ?"), ("I'm fine, thank you.", "Ça va, merci."), ("I'm fine, thank you.", "Je vais bien, merci."),
    ("I'm fine, and you?", "Ça va, et toi ?"), ("Very well, and you?", "Très bien, et vous ?"), ("Not bad.", "Pas mal."), ("What's up?", "Quoi de neuf ?"),
    ("Nothing much.", "Pas grand-chose."), ("Long time no see!", "Ça fait longtemps !"), ("It's been a long time!", "Ça fait longtemps !"),
    ("How much is it?", "C'est combien ?"), ("How much does it cost?", "Combien ça coûte ?"), ("How much does it cost?", "Ça coûte combien ?"),
    ("The bill, please.", "L'addition, s'il vous plaît."), ("I'd like a coffee, please.", "Je voudrais un café, s'il vous plaît."),
    ("I would like a glass of water.", "J'aimerais un verre d'eau."), ("Good night!", "Bonne nuit !"), ("Have a nice day!", "Bonne journée !"),
    ("Have a nice evening!", "Bonne soirée !"), ("Have a good weekend!", "Bon week-end !"), ("Good luck!", "Bonne chance !"),
    ("Enjoy your meal!", "Bon appétit !"), ("Have a good trip!", "Bon voyage !"), ("Happy holidays!", "Bonnes vacances !"),
    ("Get well soon!", "Bon rétablissement !"), ("Congratulations!", "Félicitations !"), ("Welcome!", "Bienvenue !"), ("Goodbye!", "Au revoir !"),
    ("See you!", "À plus !"), ("See you tonight!", "À ce soir !"), ("See you next week!", "À la semaine prochaine !"), ("Excuse me.", "Excusez-moi."),
    ("Of course.", "Bien sûr."), ("Never mind.", "Tant pis."), ("What's your name?", "Comment tu t'appelles ?"),
    ("What's your name?", "Comment vous appelez-vous ?"), ("Where are you from?", "D'où viens-tu ?"), ("Where are you from?", "Vous venez d'où ?"),
    ("How old are you?", "Quel âge as-tu ?"), ("How old are you?", "Quel âge avez-vous ?"), ("Do you speak English?", "Vous parlez anglais ?"),
    ("Do you speak French?", "Parlez-vous français ?"), ("Do you speak French?", "Tu parles français ?"), ("I don't understand.", "Je ne comprends pas."),
    ("Can you repeat, please?", "Vous pouvez répéter, s'il vous plaît ?"), ("Where are the toilets?", "Où sont les toilettes ?"),
    ("Where is the station?", "Où est la gare ?"), ("I don't know where the station is.", "Je ne sais pas où est la gare."),
    ("What time is it?", "Quelle heure est-il ?"), ("I'm lost.", "Je suis perdu."), ("Help!", "Au secours !"), ("Watch out!", "Attention !"),
    ("I agree.", "Je suis d'accord."), ("Me too.", "Moi aussi."), ("Me neither.", "Moi non plus."), ("Why not?", "Pourquoi pas ?"),
    ("It's up to you.", "C'est comme tu veux."), ("I miss you.", "Tu me manques."), ("I love you.", "Je t'aime."),
]  # fmt: skip
SET_CLOSINGS = [("Best regards", "Cordialement"), ("Kind regards", "Bien cordialement"), ("Best wishes", "Amitiés"), ("See you soon", "À bientôt"), ("Love", "Bisous")]
SET_ATTACHED = [("the invoice", "la facture"), ("my CV", "mon CV"), ("the report", "le rapport"), ("the photos", "les photos"), ("the contract", "le contrat"),
                ("the programme", "le programme"), ("the document", "le document"), ("the form", "le formulaire")]  # fmt: skip
WEEKDAYS = [("Monday", "lundi"), ("Tuesday", "mardi"), ("Wednesday", "mercredi"), ("Thursday", "jeudi"), ("Friday", "vendredi"), ("Saturday", "samedi"), ("Sunday", "dimanche")]
SET_DATES = [("{d}", "le {d}"), ("on {d}", "le {d}"), ("My birthday is on {d}.", "Mon anniversaire est le {d}."), ("Today is {d}.", "Nous sommes le {d}."),
             ("The meeting is on {w}, {d}.", "La réunion est le {w} {d}."), ("We arrive on {d}.", "Nous arrivons le {d}."),
             ("The shop is closed on {d}.", "Le magasin est fermé le {d}."), ("I was born on {d}.", "Je suis né le {d}.")]  # fmt: skip
SET_WEEKDAYS = [("I work on {w}.", "Je travaille {w}."), ("The meeting is on {w}.", "La réunion est {w}."), ("See you on {w}!", "À {w} !"),
                ("We leave on {w} morning.", "Nous partons {w} matin."), ("I work on {w}s.", "Je travaille le {w}."),
                ("The market is on {w}s.", "Le marché a lieu le {w}.")]  # fmt: skip
SET_AGES = [("I am {n} years old.", "J'ai {n} ans."), ("I'm {n} years old.", "J'ai {n} ans."), ("I'm {n}.", "J'ai {n} ans."),
            ("My mother is {n} years old.", "Ma mère a {n} ans."), ("My father is {n}.", "Mon père a {n} ans."), ("She is {n} years old.", "Elle a {n} ans."),
            ("He is {n} years old.", "Il a {n} ans."), ("We are {n} years old.", "Nous avons {n} ans."), ("Are you {n}?", "Tu as {n} ans ?")]  # fmt: skip


def _ordinal(day: int) -> str:
    """4 -> "4th", 1 -> "1st", 22 -> "22nd"."""
    return f"{day}" + ("th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th"))


def set_rows() -> Iterator[tuple[str, str, str]]:
    """What is said one set way, not word for word (``SET_SOURCE``, English, French): meeting and
    courtesy ("Nice to meet you." / "Enchanté."), small talk ("How are you?" / "Ça va ?"), a letter's greeting and closing ("Dear Sir or
    Madam," / "Madame, Monsieur,", "Best regards, Marie" / "Cordialement, Marie", "Dear Pierre," /
    "Cher Pierre,"), dates written the American way ("March 4th" / "le 4 mars", "on Monday, March 1"
    / "le lundi 1er mars"; "on Monday" / "lundi" beside "on Mondays" / "le lundi") and ages in
    figures ("I'm 25." / "J'ai 25 ans.").  Their own rows, not a
    frame: the frames' instances and held-out splits stay as they are; the corpus build leaves out
    any that a committed split holds."""
    for en, fr in SET_PHRASES + SET_SMALL_TALK:
        yield SET_SOURCE, en, fr
    for name, g in NAMES:
        yield SET_SOURCE, f"Dear {name},", ("Chère" if g == "f" else "Cher") + f" {name},"
        yield SET_SOURCE, f"Hi {name},", f"Salut {name},"
        yield SET_SOURCE, f"Nice to meet you, {name}.", ("Enchantée" if g == "f" else "Enchanté") + f", {name}."
        for close_en, close_fr in SET_CLOSINGS:
            yield SET_SOURCE, f"{close_en}, {name}", f"{close_fr}, {name}"
    for doc_en, doc_fr in SET_ATTACHED:
        yield SET_SOURCE, f"Please find attached {doc_en}.", f"Veuillez trouver ci-joint {doc_fr}."
        yield SET_SOURCE, f"I am sending you {doc_en}.", f"Je vous envoie {doc_fr}."
    for wd_en, wd_fr in WEEKDAYS:  # a day of the week: "on Monday" is "lundi", "on Mondays" "le lundi"
        for en, fr in SET_WEEKDAYS:
            yield SET_SOURCE, en.format(w=wd_en), fr.format(w=wd_fr)
    for k, (month_en, month_fr) in enumerate(MONTHS):
        for day in range(1, 32, 5):
            if day > (28 if month_en == "February" else 30 if month_en in ("April", "June", "September", "November") else 31):
                continue
            fr_day = "1er" if day == 1 else str(day)
            en_day = (f"{month_en} {_ordinal(day)}", f"{month_en} {day}")[(day + k) % 2]
            wd_en, wd_fr = WEEKDAYS[(day + 3 * k) % 7]
            for en, fr in SET_DATES:
                yield SET_SOURCE, en.format(d=en_day, w=wd_en), fr.format(d=f"{fr_day} {month_fr}", w=wd_fr)
    for k, n in enumerate(range(18, 96)):
        en, fr = SET_AGES[k % len(SET_AGES)]
        yield SET_SOURCE, en.format(n=n), fr.format(n=n)
        en, fr = SET_AGES[(k + 4) % len(SET_AGES)]
        yield SET_SOURCE, en.format(n=n), fr.format(n=n)
