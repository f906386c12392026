"""Cleaning shared by the corpus sources: UI markup, accelerators and placeholders stripped,
whitespace normalised, and pair filters (length, length ratio, language identification)."""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

from rendition.model.text.stand_ins import FILLERS, NUMBERS

_WS = re.compile(r"\s+")
_TAGS = re.compile(r"</?[A-Za-z][^<>]{0,200}>")
# printf (%s, %1$d, %-5.2f, %lu), Python (%(name)s), Qt/KDE (%1, %L1), brace ({0}, {name}), $VAR, @NAME@
_PLACEHOLDER = re.compile(
    r"%(?P<pos>\d+\$)?(?P<name>\([A-Za-z_][\w.-]*\))?[-+#0']*\d*(?:\.\d+)?(?:hh|h|ll|l|L|q|j|z|t)?(?P<conv>[diouxXeEfFgGaAcsp])"
    r"|%L?(?P<qt>\d+)\b|\{(?P<brace>[\w.]*)(?::[^{}]*)?\}|\$\{?(?P<var>[A-Za-z_]\w*)\}?|@(?P<at>[A-Za-z_]\w*)@"
)
_ACCEL_UNDERSCORE = re.compile(r"(?<![\w_])_(?=\w)|(?<=\w)_(?=\w)(?=[^_\s]*\s|[^_\s]*$)")
_ACCEL_AMP = re.compile(r"&(?=[^\W\d_])(?![A-Za-z]+;)")
_ACCEL_PAREN = re.compile(r"\s*\(&?_?[A-Z0-9]\)")  # CJK-style "(_F)"
_EMPTY_BRACKETS = re.compile(r"\(\s*\)|\[\s*\]|«\s*»|\"\s*\"|'\s*'|“\s*”|‘\s*’")
_SPACE_PUNCT = re.compile(r"\s+([,.;!?)\]}])")
_FR_SPACE_PUNCT = re.compile(r"\s+([,.)\]}])")
_LETTER = re.compile(r"[^\W\d_]")
_CODEY = re.compile(r"[=<>{}\[\]\\|/~^`]|\w+\.\w+\(|--\w|^\W")


def normalise_text(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in text)
    return _WS.sub(" ", text).strip()


def strip_ui(text: str, lang: str) -> str:
    """A UI string as plain text: markup, accelerators and placeholders removed."""
    text = _TAGS.sub("", text)
    text = html.unescape(text)
    text = _ACCEL_PAREN.sub("", text)
    text = _ACCEL_AMP.sub("", text)
    if "_" in text and " " in text.strip() or text.startswith("_"):
        text = _ACCEL_UNDERSCORE.sub("", text)
    text = _EMPTY_BRACKETS.sub("", text)
    text = text.replace("…", "...")
    text = normalise_text(text)
    text = (_FR_SPACE_PUNCT if lang == "fr" else _SPACE_PUNCT).sub(r"\1", text)
    return text.strip(" :-,;")


def _placeholder_keys(text: str) -> list[tuple[str, bool]]:
    """(identity, numeric) of each placeholder in order: named and numbered ones by name, bare
    printf conversions by their rank."""
    keys, rank = [], 0
    for m in _PLACEHOLDER.finditer(text):
        numeric = (m.group("conv") or "s") in "diouxX"
        if m.group("pos") or m.group("name") or m.group("qt") or m.group("brace") or m.group("var") or m.group("at"):
            key = m.group("pos") or m.group("name") or m.group("qt") or m.group("brace") or m.group("var") or m.group("at")
        else:
            key, rank = f"#{rank}", rank + 1
        keys.append((key, numeric))
    return keys


def fill_placeholders(src: str, tgt: str) -> tuple[str, str] | None:
    """Replace the placeholders of a catalog entry by the same stand-ins on both sides (a number
    for integer conversions, X, Y, Z... for the others), so the pair stays a sentence pair;
    None when the two sides do not hold the same placeholders."""
    ks, kt = _placeholder_keys(src), _placeholder_keys(tgt)
    if sorted(ks) != sorted(kt):
        return None
    if not ks:
        return src, tgt
    fills: dict[str, str] = {}
    used = {True: 0, False: 0}
    for key, numeric in ks:
        if key not in fills:
            pool = NUMBERS if numeric else FILLERS
            if used[numeric] >= len(pool):
                return None
            fills[key] = pool[used[numeric]]
            used[numeric] += 1
    it_s, it_t = iter(ks), iter(kt)
    src = _PLACEHOLDER.sub(lambda m: fills[next(it_s)[0]], src)
    tgt = _PLACEHOLDER.sub(lambda m: fills[next(it_t)[0]], tgt)
    return src, tgt


def word_count(text: str) -> int:
    return len(text.split())


def looks_like_text(text: str) -> bool:
    """Natural-language text rather than identifiers, paths, code or numbers."""
    letters = len(_LETTER.findall(text))
    if letters < 2 or letters < 0.5 * len(text):
        return False
    bare = text.rstrip(".!?:…")
    if " " not in bare and (any(c in bare for c in "_./:@") or re.search(r"[a-z][A-Z]", bare)):
        return False
    return not _CODEY.search(text)


def ratio_ok(src: str, tgt: str, low: float = 0.5, high: float = 2.2) -> bool:
    ratio = (len(tgt) + 5) / (len(src) + 5)
    return low <= ratio <= high


@lru_cache(maxsize=1)
def _identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    ident.set_languages(["en", "fr", "de", "es", "it", "nl", "pt"])
    return ident


def language(text: str) -> tuple[str, float]:
    """(language, probability) by py3langid, restricted to a few European languages."""
    return _identifier().classify(text)


def language_ok(text: str, lang: str, min_words: int = 4) -> bool:
    """Too short to tell: accepted. Otherwise the identified language must be ``lang``."""
    if word_count(text) < min_words:
        return True
    got, prob = language(text)
    return got == lang or prob < 0.9
