"""Placeholders (``%s``, ``%(name)s``, ``{0}``, ``<b>``...) protected through translation.

The translator never saw placeholders in training: the gettext part of its corpus had them
replaced by stand-ins (``rendition.model.text.stand_ins``), ``X``, ``Y``, ``Z``...
for strings and numbers (3, 7, 12...) for integer conversions.  ``protect`` does the same before
translation and ``restore`` puts the originals back; ``restore`` answers ``None`` (keep the text
untranslated) when a stand-in is missing or repeated, when unnumbered printf conversions came back
in another order (their arguments would be swapped), or when the translation holds a ``%`` of its
own (a new conversion for printf).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rendition.model.text.stand_ins import FILLERS, NUMBERS, free, padding
from rendition.model.text.stand_ins import word as _word

# printf (%s, %1$d, %-5.2f, %lu), Python (%(name)s), Qt/KDE (%1, %L1), brace ({0}, {name}), $VAR,
# @NAME@, markup tags; "%%" (a literal percent sign) is matched first so that "%%s" is not "%s"
PLACEHOLDER = re.compile(
    r"(?P<pct>%%)"
    r"|%(?P<pos>\d+\$)?(?P<name>\([A-Za-z_][\w.-]*\))?[-+#0']*\d*(?:\.\d+)?(?:hh|h|ll|l|L|q|j|z|t)?(?P<conv>[diouxXeEfFgGaAcsp])"
    r"|%L?(?P<qt>\d+)\b|\{(?P<brace>[\w.]*)(?::[^{}]*)?\}|\$\{?(?P<var>[A-Za-z_]\w*)\}?|@(?P<at>[A-Za-z_]\w*)@"
    r"|(?P<tag></?[A-Za-z][^<>]{0,200}>)"
)


@dataclass(frozen=True)
class Protected:
    """``text`` with stand-ins; ``originals[stand-in]`` is what each replaced; ``ordered``: the
    stand-ins of unnumbered printf conversions, in source order."""

    text: str
    originals: dict[str, str]
    ordered: tuple[str, ...]
    padded: dict[str, tuple[bool, bool]]  # a space added before / after the stand-in (taken out again)
    percents: int  # "%" characters in the source (all of them accounted for by its placeholders)


def placeholders(text: str) -> list[str]:
    """The placeholders of ``text`` in order."""
    return [m.group(0) for m in PLACEHOLDER.finditer(text)]


def protect(text: str) -> Protected | None:
    """``text`` with its placeholders replaced by stand-ins; ``None`` when it has more of a kind
    than there are stand-ins (the text is then left untranslated)."""
    found = list(PLACEHOLDER.finditer(text))
    if not found:
        return Protected(text, {}, (), {}, text.count("%"))
    unused = {True: free(NUMBERS, text), False: free(FILLERS, text)}
    originals: dict[str, str] = {}
    padded: dict[str, tuple[bool, bool]] = {}
    ordered: list[str] = []
    out, last = [], 0
    for m in found:
        numeric = bool(m.group("conv") and m.group("conv") in "diouxX")
        if not unused[numeric]:
            return None
        stand_in = unused[numeric].pop(0)
        originals[stand_in] = m.group(0)
        if m.group("conv") and not m.group("pos") and not m.group("name"):
            ordered.append(stand_in)
        # the stand-in a word of its own ("%sfoo" -> "X foo"; the space is taken out again)
        before, after = padding(text, m.start(), m.end())
        padded[stand_in] = (bool(before), bool(after))
        out += [text[last : m.start()], before, stand_in, after]
        last = m.end()
    out.append(text[last:])
    return Protected("".join(out), originals, tuple(ordered), padded, text.count("%"))


def restore(p: Protected, translation: str) -> str | None:
    """The translation with the original placeholders back; ``None`` when they did not all come
    back exactly once (or unnumbered printf ones came back reordered)."""
    if not p.originals:
        return translation if translation.count("%") == p.percents else None
    if "%" in translation:
        return None
    spots: dict[str, int] = {}
    for stand_in in p.originals:
        hits = list(_word(stand_in).finditer(translation))
        if len(hits) != 1:
            return None
        spots[stand_in] = hits[0].start()
    if [s for s in sorted(spots, key=spots.__getitem__) if s in p.ordered] != list(p.ordered):
        return None
    names = "|".join(re.escape(s) for s in sorted(p.originals, key=len, reverse=True))
    pattern = re.compile(rf"( ?)(?<![\w])({names})(?![\w])( ?)")

    def put_back(m: re.Match) -> str:
        before, after = p.padded[m.group(2)]
        return ("" if before else m.group(1)) + p.originals[m.group(2)] + ("" if after else m.group(3))

    return pattern.sub(put_back, translation)
