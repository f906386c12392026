"""Set phrases of conversation: greetings, thanks, apologies, leave-takings.

Their translations are idioms ("How are you?" is "Comment allez-vous ?", not "Comment êtes-vous ?")
that the message catalogs of games and chat programs hold only a few times each, while the
realised sentences hold thousands of literal questions of the same shape ("Are you tired?" /
"Êtes-vous fatigué ?").  The catalogs' pairs whose English is one of these phrases, alone or with
a greeting before it or a name after it ("Hello, how are you?", "Thank you, Ethel!"), are marked
as their own corpus source, ``phrases`` (FreeDict's entries too where the English is a sentence,
"how are you?"), so that training can weight them (``--upsample``).  Only
the English phrase is listed here; every pair comes from the packages' catalogs.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

SOURCE = "phrases"
FROM_SOURCES = ("ui", "dialogue", "dict")  # catalogs; FreeDict's only as a sentence ("how are you?"), not a gloss ("take care" -> "avoir soin de")

PHRASES = frozenset({
    "hello", "hi", "good morning", "good afternoon", "good evening", "good night", "goodbye", "good bye", "bye",
    "see you", "see you later", "see you soon", "see you tomorrow", "how are you", "how are you doing",
    "how are you today", "how is it going", "how's it going", "what's up", "i'm fine", "i'm fine thanks",
    "i'm fine thank you", "fine thanks", "not bad", "and you", "nice to meet you", "pleased to meet you",
    "welcome", "thank you", "thanks", "thank you very much", "thanks a lot", "many thanks", "you're welcome",
    "no thanks", "no thank you", "yes please", "excuse me", "sorry", "i'm sorry", "i am sorry", "never mind",
    "it doesn't matter", "no problem", "of course", "good luck", "have a nice day", "have a good day",
    "well done", "congratulations", "happy birthday", "merry christmas", "happy new year", "cheers",
    "what's your name", "what is your name", "my name is", "how old are you", "where do you live",
    "where are you from", "i don't understand", "i don't know", "i know", "me too", "i agree",
    "can you help me", "what time is it", "let's go", "come in", "sit down", "be careful", "take care",
    "sleep well", "enjoy your meal", "i'm hungry", "i'm thirsty", "i'm tired", "i love you",
})

_LEAD = re.compile(r"^(?i:hello|hi|hey|oh|well|ah|yes|no)(?: [A-Z][\w'-]*)?\s*[,!.]\s*")
_NAME = re.compile(r",\s*(?:my friend|[A-Z][\w'-]*(?: [A-Z][\w'-]*)?)\s*([.!?]*)\s*$")
_PUNCT = re.compile(r"[^\w' ]+")


def key(english: str) -> str:
    """The phrase a sentence says, lower case, without a greeting before it, a name after it or
    punctuation: "Hello, how are you, Ethel?" -> "how are you"."""
    s = english.replace("\u2019", "'").strip()
    s = _NAME.sub(r"\1", s)
    rest = _LEAD.sub("", s)
    s = rest if _PUNCT.sub("", rest).strip() else s
    return " ".join(_PUNCT.sub(" ", s.lower()).split())


def is_phrase(english: str) -> bool:
    return key(english) in PHRASES


def mark(rows: Iterable[tuple[str, str, str]]) -> Iterator[tuple[str, str, str]]:
    """The rows, a catalog pair whose English is a set phrase relabelled ``phrases``."""
    for src, en, fr in rows:
        sentence = src != "dict" or en.rstrip()[-1:] in ("?", "!", ".")
        yield (SOURCE, en, fr) if src in FROM_SOURCES and sentence and is_phrase(en) else (src, en, fr)
