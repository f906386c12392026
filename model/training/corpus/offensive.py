"""Slurs and sexual insults kept out of the lexicon, the dictionary rows and the sentences realised
from them.

Bilingual dictionaries list such words with a neutral gloss ("whore" -> "fille", "fag" ->
"clope"), so a one-word pair can teach the model an insult for an everyday word.  WordNet marks
the English ones whose most frequent sense is a slur ("(ethnic slur) ...", "offensive term for
..."): ``lexicon.WordNet.offensive`` reads that mark; these lists hold the rest, one per language,
and the few words whose everyday sense is violent where a dictionary gives an innocent one
("rape", the plant, for "colza").
"""

from __future__ import annotations

import re

ENGLISH = frozenset(
    """
    nigger nigga negro negress coon darky darkie kike spic wetback chink gook jap nip paki
    raghead towelhead faggot fag dyke tranny poof poofter
    whore slut hooker hussy skank bitch cunt twat pussy wanker bastard arse arsehole asshole
    dick cock bollocks motherfucker fuck shit rape
    """.split()
)
FRENCH = frozenset(
    """
    bougnoul bougnoule nègre négresse négro bicot bamboula youpin youtre chinetoque niakoué
    rital boche pédé tapette tarlouze gouine travelo
    putain pute salope roulure pouffiasse pétasse garce catin traînée grognasse
    connard connasse salaud salopard enculé enfoiré bâtard bâtarde couille couilles bite con conne cul merde foutre
    """.split()
)

_WORD = re.compile(r"[\w'-]+")


def is_offensive(text: str, lang: str) -> bool:
    """Whether any word of ``text`` is on the list of its language, "en" or "fr" (case-insensitive):
    "bite" is a word of English and an insult in French, "chatte" a cat."""
    words = ENGLISH if lang == "en" else FRENCH
    return any(w in words for w in _WORD.findall(text.casefold()))
