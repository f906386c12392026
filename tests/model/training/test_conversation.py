"""The conversation frames (constructions that differ between English and French) and the
sentences whose names and code stay as written."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from test_daily import _dictd  # (this directory is on sys.path)

from rendition.model.training.corpus import build, conversation, verbatim
from rendition.model.training.corpus.lexicon import Noun
from rendition.model.training.data import SPLITS_DIR, normalise, read_tsv
from rendition.model.training.evaluate import has_word, read_words

NOUNS = [
    Noun("umbrella", "parapluie", "m", "object", True, 40), Noun("bread", "pain", "m", "food", True, 30, countable=False),
    Noun("apple", "pomme", "f", "food", True, 30), Noun("cat", "chat", "m", "animal", True, 30), Noun("garden", "jardin", "m", "place", True, 30),
    Noun("table", "table", "f", "furniture", True, 30), Noun("coat", "manteau", "m", "clothing", True, 30), Noun("orange", "orange", "f", "food", True, 35),
]  # fmt: skip


@pytest.fixture(scope="module")
def instances() -> list[conversation.Instance]:
    return list(conversation.instances(NOUNS, 13_500, seed=0))


@pytest.fixture(scope="module")
def forms(instances: list[conversation.Instance]) -> set[tuple[str, str]]:
    return {f for i in instances for f in i.forms}


@pytest.mark.parametrize(
    "pair",
    [
        ("I am hungry.", "J'ai faim."),
        ("I'm hungry.", "J'ai faim."),
        ("I'm not hungry any more.", "Je n'ai plus faim."),
        ("He isn't cold.", "Il n'a pas froid."),
        ("It is raining.", "Il pleut."),
        ("It's raining.", "Il pleut."),
        ("It's going to rain.", "Il va pleuvoir."),
        ("It is not windy.", "Il n'y a pas de vent."),
        ("I have had a headache since yesterday.", "J'ai mal à la tête depuis hier."),
        ("My back hurts.", "J'ai mal au dos."),
        ("How old is your daughter?", "Ta fille a quel âge ?"),
        ("What time is it?", "Il est quelle heure ?"),
        ("Where are you from?", "D'où venez-vous ?"),
        ("Sorry, I am late.", "Désolé, je suis en retard."),
        ("It has been raining since this morning.", "Il pleut depuis ce matin."),
        ("Can I pay by card?", "Est-ce que je peux payer par carte ?"),
        ("I'll call you back in ten minutes.", "Je te rappelle dans dix minutes."),
        ("What time does the shop close on Saturdays?", "À quelle heure le magasin ferme-t-il le samedi ?"),
        ("How long have you lived here?", "Depuis combien de temps habitez-vous ici ?"),
        ("She left ten minutes ago.", "Elle est partie il y a dix minutes."),
        ("I have just eaten.", "Je viens de manger."),
        ("We are going to the cinema tonight, do you want to come?", "On va au cinéma ce soir, tu veux venir ?"),
        ("I'm hungry, what are we eating?", "J'ai faim, on mange quoi ?"),
        ("Is there any bread on the table?", "Y a-t-il du pain sur la table ?"),
        ("There are no apples in the garden.", "Il n'y a pas de pommes dans le jardin."),
        ("She doesn't drink any more.", "Elle ne boit plus."),
        ("Marie has been waiting for an hour.", "Marie attend depuis une heure."),
        ("Happy birthday!", "Joyeux anniversaire !"),
        ("Happy New Year!", "Bonne année !"),
        ("Nice to meet you.", "Ravi de vous rencontrer."),
        ("Let's meet in front of the station.", "On se retrouve devant la gare."),
    ],
)
def test_frames_realise_the_construction_both_ways(forms: set[tuple[str, str]], pair: tuple[str, str]) -> None:
    assert pair in forms


def test_a_question_comes_three_ways_with_one_english(instances: list[conversation.Instance]) -> None:
    (inst,) = [i for i in instances if i.key == "state|tu|faim|question"]
    assert sorted(inst.forms) == [("Are you hungry?", "As-tu faim ?"), ("Are you hungry?", "Est-ce que tu as faim ?"), ("Are you hungry?", "Tu as faim ?")]
    assert conversation.question_forms(conversation.PEOPLE[0], "part", "", "quand")[-1] == "quand Marie part-elle  ?"


def test_french_elides_contracts_and_agrees(forms: set[tuple[str, str]]) -> None:
    french = [fr for _, fr in forms]
    assert not [f for f in french if re.search(r"(?i)(?<![\w-])(je|ne|de|que|me|te|se) [aeiouéèêh]", f)]
    assert not [f for f in french if re.search(r"\b(à|de) les? ", f)]
    assert not [f for f in french if re.search(r"\b(a|va|aime|ferme)-(il|elle|on)\b", f)]  # "a-t-il", never "a-il"
    # the participle of an être verb agrees with a feminine or plural subject
    for fr in french:
        if m := re.match(r"(Elle|Elles|Marie|Claire|Sophie) (?:est|sont) (parti|arrivé|rentré|sorti|venu|allé)(\w*) ", fr):
            assert m.group(3) == ("es" if m.group(1) == "Elles" else "e"), fr
    sleeping = [(en, fr) for en, fr in forms if re.fullmatch(r"\w+ (was|were) sleeping when (Marie|Claire|Sophie|Anna|Léa) left\.", en)]
    assert sleeping and all(re.search(r" dorm(ais|ait|ions|iez|aient) quand \w+ est partie\.$", fr) for _, fr in sleeping)  # imparfait, then passé composé
    assert conversation.elide("je ai vu de le pain à les enfants si il vient") == "j'ai vu du pain aux enfants s'il vient"


def test_english_uses_do_support_and_the_present_perfect(forms: set[tuple[str, str]]) -> None:
    for en, fr in forms:
        if re.match(r"Depuis combien de temps \w+-(tu|vous) ", fr):
            assert en.startswith("How long have you "), (en, fr)
        if re.match(r"(Il|Elle) (?!pleut|neige)\w+ depuis (une|deux|trois|quatre) heures?\.$", fr):
            assert re.match(r"(He|She) has been \w+ing for ", en), (en, fr)
        if re.match(r"(?!Ça)\w+ ne \w+ rien\.$", fr):
            assert re.search(r"\b(don't|doesn't) \w+ anything\.$", en), (en, fr)


def test_every_pair_has_the_words_of_its_construction(instances: list[conversation.Instance]) -> None:
    for i in instances:
        for en, fr in i.forms:
            assert all(has_word(en, w) for w in i.en_words), (en, i.en_words)
            assert all(has_word(fr, w) for w in i.fr_words), (fr, i.fr_words)


def test_a_state_in_context_goes_with_its_plain_instance(instances: list[conversation.Instance]) -> None:
    more = [i for i in instances if i.frame == "state" and i.group]
    assert len({i.key.split("|")[3] for i in more}) == 6 and sum(i.key.split("|")[1] == "je" for i in more) > 200
    assert all(i.split == conversation.split_of(i.group) and i.group.count("|") == 3 for i in more)
    assert {i.split for i in more} == {"train", "valid", "test"}
    assert conversation.contract("I am not hungry.", "I", "am") == "I'm not hungry."
    assert conversation.contract("Oh, he was not cold.", "he", "was") == "Oh, he wasn't cold."
    assert conversation.contract("we are cold.", "we", "are") == "we're cold."
    english = [en for i in more for en, _ in i.forms]
    assert not [en for en in english if re.search(r"\bnot \w+( \w+)? too\b|n't \w+( \w+)? too\b", en)]  # "not ... either"


def test_introductions_wishes_and_paying_agree_and_leave_the_other_frames_alone() -> None:
    """The third stream (``Frames.EXTRA``): a relation's name agrees with it ("my sister's name is
    Marie", never "Pierre"); and the other frames draw the same instances, in the same order, with
    it as without it."""
    got = list(conversation.instances(NOUNS, 13_500, seed=0))
    extra = [i for i in got if i.frame in conversation.EXTRA_KINDS]
    assert {i.frame for i in extra} == set(conversation.EXTRA_KINDS)
    assert len(got) - len(extra) == 13_500  # (the others count alone)
    female = {n for n, g in conversation.NAMES if g == "f"}
    for i in extra:
        for en, _ in i.forms:
            if m := re.search(r"(?:sister|daughter)'s name is (\w+)", en):
                assert m.group(1) in female, en
    assert any(fr.startswith("Bonjour, je m'appelle") for i in extra for _, fr in i.forms)
    assert any("payer par carte" in fr for i in extra for _, fr in i.forms)
    plain = conversation.Frames(NOUNS, random.Random(0), random.Random("more|0"))
    both = conversation.Frames(NOUNS, random.Random(0), random.Random("more|0"), random.Random("extra|0"))
    without = [i.key if i else None for i in (plain.draw() for _ in range(3000))]
    with_extra = [i.key if i else None for i in (both.draw() for _ in range(3200))]
    others = [k for k in with_extra if k and k.split("|")[0] not in conversation.EXTRA_KINDS]
    before = [k for k in without if k]
    n = min(len(others), len(before))
    assert n >= 2500 and others[:n] == before[:n]


def test_corpus_rows_label_the_third_stream_the_hours_and_the_set_phrases_on_their_own(instances: list[conversation.Instance]) -> None:
    """Each of the few-row groups has a source of its own (so that training can weight it alone):
    every form of a third-stream instance is ``convextra``, of the others ``conversation``."""
    rows = list(conversation.corpus_rows(NOUNS, 13_500, seed=0))
    by_source: dict[str, set[tuple[str, str]]] = {}
    for src, en, fr in rows:
        by_source.setdefault(src, set()).add((en, fr))
    assert set(by_source) == {"conversation", "convextra", "convclock", "convset"}
    train = [i for i in instances if i.split == "train"]
    assert by_source["convextra"] == {f for i in train if i.frame in conversation.EXTRA_KINDS for f in i.forms}
    assert by_source["conversation"] == {f for i in train if i.frame not in conversation.EXTRA_KINDS for f in i.forms}
    assert by_source["convclock"] == {(en, fr) for _, en, fr in conversation.clock_rows()}
    assert by_source["convset"] == {(en, fr) for _, en, fr in conversation.set_rows()}


def test_the_hours_of_the_day_say_the_same_hour_and_part_both_ways() -> None:
    rows = list(conversation.clock_rows())
    assert len(rows) == len(set(rows)) == 828
    assert ("convclock", "It is eight o'clock in the evening.", "Il est huit heures du soir.") in rows
    assert ("convclock", "The train leaves at quarter to one in the afternoon.", "Le train part à une heure moins le quart de l'après-midi.") in rows
    hours_en = {w: h for h, w in enumerate("zero one two three four five six seven eight nine ten eleven".split())}
    hours_fr = {w: h for h, w in enumerate("zéro une deux trois quatre cinq six sept huit neuf dix onze".split())}
    minutes = {"o'clock": "", "half past": " et demie", "quarter past": " et quart", "quarter to": " moins le quart"}
    parts = {"in the morning": "du matin", "in the afternoon": "de l'après-midi", "in the evening": "du soir"}
    for _, en, fr in rows:
        m_en = re.search(r"(half past|quarter past|quarter to)? ?(\w+)(?: (o'clock))? (in the \w+)", en)
        m_fr = re.search(r"(\w+) heures? ?((?:et demie|et quart|moins le quart)?) (du matin|de l'après-midi|du soir)", fr)
        assert m_en and m_fr, (en, fr)
        assert hours_en[m_en.group(2)] == hours_fr[m_fr.group(1)], (en, fr)
        assert minutes[m_en.group(1) or m_en.group(3)].strip() == m_fr.group(2), (en, fr)
        assert parts[m_en.group(4)] == m_fr.group(3), (en, fr)
        assert ("heures" in fr) == (hours_fr[m_fr.group(1)] > 1), fr


def test_set_phrases_dates_and_ages_are_said_the_set_way() -> None:
    import calendar

    rows = [(en, fr) for _, en, fr in conversation.set_rows()]
    assert len(rows) == len(set(rows))
    assert ("Nice to meet you.", "Enchanté.") in rows and ("Dear Sir or Madam,", "Madame, Monsieur,") in rows
    assert ("Best regards, Marie", "Cordialement, Marie") in rows and ("Dear Marie,", "Chère Marie,") in rows and ("Dear Pierre,", "Cher Pierre,") in rows
    assert ("Nice to meet you, Sophie.", "Enchantée, Sophie.") in rows and ("Nice to meet you, Thomas.", "Enchanté, Thomas.") in rows
    assert ("How are you?", "Ça va ?") in rows and ("Long time no see!", "Ça fait longtemps !") in rows  # small talk
    months_en = {calendar.month_name[k]: k for k in range(1, 13)}
    months_fr = {m: k for k, m in enumerate("janvier février mars avril mai juin juillet août septembre octobre novembre décembre".split(), 1)}
    suffix = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}
    dates = 0
    for en, fr in rows:
        if not (m_en := re.search(r"(" + "|".join(months_en) + r") (\d+)(st|nd|rd|th)?", en)):
            continue
        dates += 1
        m_fr = re.search(r"le (?:\w+ )?(1er|\d+) (\w+)", fr)
        assert m_fr, (en, fr)
        day, month = int(m_en.group(2)), months_en[m_en.group(1)]
        assert m_fr.group(1) == ("1er" if day == 1 else str(day)) and months_fr[m_fr.group(2)] == month, (en, fr)
        assert day <= calendar.monthrange(2023, month)[1], en  # a day the month has
        assert m_en.group(3) in (None, suffix.get(day, "th")), en
    assert dates >= 500
    ages = [(en, fr) for en, fr in rows if re.search(r"\bans\b", fr)]
    assert len(ages) >= 150
    for en, fr in ages:
        assert re.search(r"\d+", en).group() == re.search(r"\d+", fr).group(), (en, fr)  # type: ignore[union-attr]
        assert "have" not in en, en


def test_english_is_also_written_as_it_is_spoken() -> None:
    spoken = conversation.spoken
    assert spoken("I am not hungry.") == "I'm not hungry." and spoken("We have just eaten.") == "We've just eaten."
    assert spoken("She has been waiting for an hour.") == "She's been waiting for an hour." and spoken("It will rain.") == "It'll rain."
    assert spoken("I have a headache.") == "I have a headache." and spoken("He has two children.") == "He has two children."  # possession
    assert spoken("Do you know where it is?") == "Do you know where it is?" and spoken("Am I right?") == "Am I right?"
    assert spoken("They were not there.") == "They weren't there." and spoken("What is your name?") == "What's your name?"
    late = conversation.inst("late|x", [("he is ten minutes late.", "il a dix minutes de retard.")], ["late"], ["retard"])
    assert late.forms == [("He is ten minutes late.", "Il a dix minutes de retard."), ("He's ten minutes late.", "Il a dix minutes de retard.")]
    kept = conversation.inst("since|x", [("I have lived here for a year.", "J'habite ici depuis un an.")], ["have"], ["depuis"])
    assert len(kept.forms) == 1  # "I've" would lose the construction's word


def test_held_out_instances_never_train(instances: list[conversation.Instance]) -> None:
    split = {i.key: i.split for i in instances}
    assert 0.02 < sum(s != "train" for s in split.values()) / len(split) < 0.06
    train = {(en, fr) for _, en, fr in conversation.corpus_rows(NOUNS, 12_000, seed=0)}
    held = {f for i in instances if split[i.key] != "train" for f in i.forms}
    assert train and held and not train & held
    test = conversation.held_out(NOUNS, "test", size=50, n=12_000)
    assert len(test) == 50 and all(i.split == "test" for i, _, _ in test)
    assert len({i.frame for i, _, _ in test}) >= 8  # the split mixes the frames


def test_committed_conversational_splits_have_their_words_and_stay_out_of_training() -> None:
    for split in ("valid", "test"):
        pairs = read_tsv(SPLITS_DIR / f"{split}.conv.en-fr.tsv")
        words = read_words(SPLITS_DIR / f"{split}.conv.words.tsv")
        assert len(pairs) == conversation.SPLIT_SIZE and set(words) == {p.src for p in pairs}
        assert len({w[0] for w in words.values()}) >= 15  # frames
        for p in pairs:
            cat, en_words, fr_words = words[p.src]
            assert all(has_word(p.src, w) for w in en_words) and all(has_word(p.tgt, w) for w in fr_words), p
    held = {normalise(p.src) for s in ("valid", "test") for p in read_tsv(SPLITS_DIR / f"{s}.conv.en-fr.tsv")}
    rows = [(src, en, fr) for src, en, fr in conversation.corpus_rows(NOUNS, 12_000, seed=0)]
    splits, _ = build.split(rows, SPLITS_DIR)
    assert not [r for r in splits["train"] if normalise(r[1]) in held]


def test_names_and_code_are_the_same_on_both_sides() -> None:
    import random

    rng = random.Random(0)
    for template in verbatim.TEMPLATES:
        en, fr, values = verbatim.fill(template, rng)
        assert values and all(v in en and v in fr for v in values.values()), (en, fr)
    rows = list(verbatim.corpus_rows(2000))
    assert len(rows) == 2000 and len({en for _, en, _ in rows}) == 2000
    assert any("C:\\Users\\" in en and "C:\\Users\\" in fr for _, en, fr in rows)
    assert any(re.search(r"\w@\w", fr) for _, _, fr in rows)


def test_dictionary_rows_that_translate_a_first_name_are_left_out(tmp_path: Path) -> None:
    assert verbatim.maps_name("Peter", "Pierre") and verbatim.maps_name("William", "Guillaume") and verbatim.maps_name("Stephen", "Étienne")
    assert not verbatim.maps_name("stone", "pierre") and not verbatim.maps_name("Pierre", "Pierre") and not verbatim.maps_name("London", "Londres")
    d = tmp_path / "usr" / "share" / "dictd"
    d.mkdir(parents=True)
    _dictd(d, "fra-eng", {"Pierre": ["Peter"], "pierre": ["stone"], "Guillaume": ["William"], "chat": ["cat"]})
    assert sorted(build.dictionary_rows(tmp_path)) == [("dict", "cat", "chat"), ("dict", "stone", "pierre")]
