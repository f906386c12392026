"""The text pipeline (``rendition.model.text.pipeline``) with the shipped translator: the spans
that must not change come back verbatim where the translator alone loses them, a sentence without
one is translated as without the protection, and a sentence that reaches its length limit is
decoded a second time with no repeated n-gram."""

from __future__ import annotations

import asyncio
import re

import pytest

from rendition.model.text import pipeline, spans
from rendition.model.text.cli import translate_lines, translator_decoder
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.translator import Translator

WINDOWS = r"The installer is in C:\Downloads\setup.exe."
PLAIN = "Click on the button to save the document."
LONG = "This package contains the shared libraries and the header files that you need to build programs."


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


def test_spans_come_back_verbatim_and_other_sentences_do_not_change(shipped: Translator) -> None:
    text = f"{WINDOWS}  {PLAIN}\nSee https://example.com/docs/setup for `setup.exe --quiet`."
    kept = translate_lines(shipped, [text], "en", "fr", progress=False, beam_size=2)[0]
    free = translate_lines(shipped, [text], "en", "fr", progress=False, protect_spans=False, beam_size=2)[0]
    for span in (r"C:\Downloads\setup.exe", "https://example.com/docs/setup", "`setup.exe --quiet`"):
        assert span in kept
    assert r"C:\Downloads\setup.exe" not in free  # (the translator alone mangles a Windows path)
    alone = shipped.translate([PLAIN], "en", "fr", beam_size=2)[0].text
    assert kept.split("\n")[0].endswith(f"  {alone}") and free.split("\n")[0].endswith(f"  {alone}")  # gaps kept


def test_emoji_come_back_whole(shipped: Translator) -> None:
    """The tokenizer spells most emoji in bytes, which the translator alone writes back broken."""
    emoji = re.compile(spans._KINDS["emoji"])
    lines = ["Happy birthday 🎂🎉!", "See you tomorrow 👋", "👍", "Family: 👨\u200d👩\u200d👧 and 🇫🇷, 👍🏽"]
    kept = translate_lines(shipped, lines, "en", "fr", progress=False, beam_size=2)
    assert kept[2] == "👍" and not [k for k in kept if "\ufffd" in k]
    assert [emoji.findall(k) for k in kept] == [emoji.findall(line) for line in lines]
    free = translate_lines(shipped, lines[:1], "en", "fr", progress=False, protect_spans=False, beam_size=2)[0]
    assert "🎂🎉" not in free  # (unprotected, the cake and the party popper do not survive)


def test_a_town_that_is_also_a_first_name_gets_a_towns_grammar(shipped: Translator) -> None:
    """A listed first name too, "Paris" after "in" is a town: with a person's stand-in the
    translator wrote "J'habite en Paris"."""
    kept = translate_lines(shipped, ["I live in Paris."], "en", "fr", progress=False, beam_size=4)
    assert kept == ["J'habite à Paris."]


def test_quoted_speech_is_translated_as_a_sentence_with_its_marks(shipped: Translator) -> None:
    """Glued to its opening mark, "Where" is spelt in letters; the sentence within the sentence gave
    '"Souvez-vous ?" Elle a demandé.'."""
    lines = ['"Where are you?" she asked.', 'He said: "I will come tomorrow."']
    kept = translate_lines(shipped, lines, "en", "fr", progress=False, beam_size=4)
    assert re.fullmatch(r'"Où (es-tu|êtes-vous) \?" elle a demandé\.', kept[0]), kept[0]  # (tu or vous: the model's choice)
    assert kept[1] == 'Il a dit : "Je viendrai demain."'


def test_a_sentence_in_capitals_is_translated_in_sentence_case(shipped: Translator) -> None:
    """In capitals, the words are spelt in pieces: "WARNING: DO NOT OPEN THE DOOR." gave
    "AVERTISSEMENT : NE NE PAS OUVER L'EU."; a placeholder keeps its own case."""
    lines = ["WARNING: DO NOT OPEN THE DOOR.", "THE FILE %s WAS NOT FOUND.", "JE M'APPELLE PIERRE.", "NASA FBI"]
    sources = ["en", "en", "fr", "en"]
    got = [translate_lines(shipped, [x], s, "fr" if s == "en" else "en", progress=False, beam_size=4)[0] for x, s in zip(lines, sources)]
    quiet = ["Warning: do not open the door.", "The file %s was not found.", "Je m'appelle Pierre.", "NASA FBI"]
    expected = [translate_lines(shipped, [x], s, "fr" if s == "en" else "en", progress=False, beam_size=4)[0] for x, s in zip(quiet, sources)]
    assert got[:3] == [e.upper().replace("%S", "%s") for e in expected[:3]]
    assert got == ["ATTENTION : N'OUVRE PAS LA PORTE.", "LE FICHIER %s N'A PAS ÉTÉ TROUVÉ.", "MY NAME IS PIERRE.", expected[3]]


def test_a_letters_greeting_keeps_its_comma(shipped: Translator) -> None:
    """The translator drops the comma after "Hi Pierre" ("Salut Pierre"); a line that ends with
    one keeps it, and a translation that already ends with punctuation is left alone."""
    bare = translate_lines(shipped, ["Hi Pierre"], "en", "fr", progress=False, beam_size=4)[0]
    assert bare.endswith(" Pierre"), bare  # (the model's own translation: no comma)
    text = "Hi Pierre,\n\nThanks for your email.\n\nThanks,\nAnna"
    got = translate_lines(shipped, [text], "en", "fr", progress=False, beam_size=4)[0]
    assert got.startswith(bare + ",\n\n") and got.endswith("\n\nMerci,\nAnna"), got


def test_a_sentence_at_its_length_limit_is_decoded_again(shipped: Translator) -> None:
    opts = TranslationOptions(beam_size=2, max_length=6)
    decode = translator_decoder(shipped, "fr", progress=False)
    again = asyncio.run(pipeline.translate([LONG, "Yes."], "en", decode, opts))
    assert again.second_options is not None and again.second_options.no_repeat_ngram_size == 4
    assert again.retried == [True] and again.cut == [(0, 0)] and again.truncated == [True, False]
    once = asyncio.run(pipeline.translate([LONG, "Yes."], "en", decode, opts, fallback_ngram=0))
    assert once.second_options is None and once.retried == [] and once.cut == [(0, 0)]


def test_a_sentence_over_the_input_limit_names_its_text(shipped: Translator) -> None:
    decode = translator_decoder(shipped, "fr", progress=False)
    giant = "word " * (shipped.cfg.max_positions + 10)
    with pytest.raises(pipeline.SentenceTooLong) as e:
        asyncio.run(pipeline.translate(["Fine.", f"Fine. {giant}"], "en", decode, TranslationOptions()))
    assert (e.value.text, e.value.sentence) == (1, 1)
