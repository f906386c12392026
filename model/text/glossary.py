"""Glossaries: source terms translated to fixed target terms.

    g = Glossary.from_mapping({"file manager": "gestionnaire de fichiers", "file": "fichier"})
    marked = g.protect("Open the File manager.")     # "Open the X." (X stands for the term)
    g.restore(marked, "Ouvrez le X.")                # "Ouvrez le gestionnaire de fichiers."

The translator never learned glossaries; it learned to copy placeholder stand-ins (the gettext
part of its corpus has ``%s``, ``{0}``... replaced by ``X``, ``Y``, ``Z``... on both sides:
``rendition.model.text.stand_ins``).  ``protect`` replaces every source term found
(case-insensitive, whole words, the longest match first) by such a stand-in, the translator copies
it, and ``restore`` puts the target term in its place.  A text in which no term occurs is left
exactly as it was (``Marked.terms`` empty), so its translation does not change.  A term the text
writes in capitals ("the SAVE button") gets its target term in capitals, unless the glossary itself
writes the source term so (an acronym: "GPU" -> "processeur graphique").  When the
translation lost a stand-in, ``restore`` appends the target term in parentheses (the text keeps
the term) and counts it in ``Restored.missing``.

Glossaries come from a mapping (a request's JSON object) or from a TSV file (``source<TAB>target``
per line, ``#`` comments); ``GlossaryError`` says what is wrong with a bad one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rendition.model.text.stand_ins import STAND_INS, free, padding
from rendition.model.text.stand_ins import word as _word

__all__ = ["STAND_INS", "Glossary", "GlossaryError", "GlossaryLimits", "Marked", "Restored", "load_glossary"]


_WORD_EDGE_BEFORE = r"(?<!\w)"
_WORD_EDGE_AFTER = r"(?!\w)"
_SPACES = re.compile(r"\s+")


class GlossaryError(ValueError):
    """A glossary that cannot be used (the message names the entry and the rule)."""


@dataclass(frozen=True)
class GlossaryLimits:
    max_terms: int = 1000  # entries per glossary
    max_term_chars: int = 200  # characters per source or target term


@dataclass(frozen=True)
class Marked:
    """``text`` with stand-ins; ``terms[stand-in]`` is the target term each one stands for."""

    text: str
    terms: dict[str, str] = field(default_factory=dict)
    capitalised: frozenset[str] = frozenset()  # stand-ins whose source term began the text capitalised


@dataclass(frozen=True)
class Restored:
    text: str
    placed: int  # target terms put where their stand-in came back
    missing: int  # stand-ins the translation lost (their terms appended)


def _clean(term: object, what: str, source: str, limits: GlossaryLimits) -> str:
    if not isinstance(term, str):
        raise GlossaryError(f"{what} of {source!r} must be a string, not {type(term).__name__}")
    if any(c in term for c in "\t\r\n\x00"):
        raise GlossaryError(f"{what} {term[:50]!r} holds a tab, line break or NUL")
    term = _SPACES.sub(" ", term).strip()
    if not term:
        raise GlossaryError(f"{what} of {source!r} is empty")
    if len(term) > limits.max_term_chars:
        raise GlossaryError(f"{what} {term[:50]!r}... is {len(term)} characters long; the limit is {limits.max_term_chars}")
    return term


class Glossary:
    """Source term -> target term, matched case-insensitively on whole words, longest first."""

    def __init__(self, terms: Mapping[str, str], stand_ins: tuple[str, ...] = STAND_INS, inline: bool = False):
        self.terms = dict(terms)
        self.stand_ins = stand_ins
        self.inline = inline  # the target term itself goes into the source text (no stand-in)
        self._by_key = {k.casefold(): v for k, v in self.terms.items()}
        self._written_in_capitals = {k.casefold() for k in self.terms if k.isupper()}  # (an acronym: its target as given)
        names = sorted(self.terms, key=len, reverse=True)
        self._pattern = (
            re.compile(
                "|".join(_WORD_EDGE_BEFORE + re.escape(n).replace(r"\ ", r"\s+") + _WORD_EDGE_AFTER for n in names),
                re.IGNORECASE,
            )
            if names
            else None
        )

    def __len__(self) -> int:
        return len(self.terms)

    def __bool__(self) -> bool:
        return bool(self.terms)

    @classmethod
    def from_mapping(cls, mapping: object, limits: GlossaryLimits = GlossaryLimits()) -> Glossary:
        """A glossary from ``{source: target}``; ``GlossaryError`` for anything else, an empty or
        over-long term, more than ``limits.max_terms`` entries, or one source term given twice
        (ignoring case) with different targets."""
        if not isinstance(mapping, Mapping):
            raise GlossaryError(f"a glossary is an object of source term -> target term, not {type(mapping).__name__}")
        return cls._build(list(mapping.items()), limits)

    @classmethod
    def from_tsv(cls, text: str, limits: GlossaryLimits = GlossaryLimits(), name: str = "glossary") -> Glossary:
        """``source<TAB>target`` per line; blank lines and lines starting with ``#`` are skipped."""
        pairs = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) != 2:
                raise GlossaryError(f"{name} line {n}: expected source<TAB>target, found {len(parts) - 1} tabs")
            pairs.append((parts[0], parts[1]))
            if len(pairs) > limits.max_terms:
                break
        try:
            return cls._build(pairs, limits)
        except GlossaryError as e:
            raise GlossaryError(f"{name}: {e}") from None

    @classmethod
    def _build(cls, pairs: Sequence[tuple[object, object]], limits: GlossaryLimits) -> Glossary:
        if len(pairs) > limits.max_terms:
            raise GlossaryError(f"more than {limits.max_terms} terms (the limit)")
        terms: dict[str, str] = {}
        keys: dict[str, str] = {}
        for src, tgt in pairs:
            s = _clean(src, "source term", str(src), limits)
            t = _clean(tgt, "target term", s, limits)
            if not any(c.isalnum() for c in s):
                raise GlossaryError(f"source term {s!r} has no letter or digit")
            k = s.casefold()
            if k in keys and terms[keys[k]] != t:
                raise GlossaryError(f"source term {s!r} is given twice with different targets")
            keys[k] = s
            terms[s] = t
        return cls({keys[k]: terms[keys[k]] for k in keys})

    def merged(self, other: Glossary) -> Glossary:
        """This glossary with ``other``'s entries added (``other`` wins on a shared source term)."""
        out = {k: v for k, v in self.terms.items() if k.casefold() not in other._by_key}
        return Glossary(out | other.terms, self.stand_ins, self.inline)

    def protect(self, text: str) -> Marked:
        """``text`` with each term found replaced by a stand-in; the text unchanged (and no terms)
        when none is found.  Terms beyond the free stand-ins stay as they are (translated freely)."""
        if self._pattern is None:
            return Marked(text)
        found = list(self._pattern.finditer(text))
        if not found:
            return Marked(text)
        unused = free(self.stand_ins, text)
        terms: dict[str, str] = {}
        capitalised: set[str] = set()
        out, last = [], 0
        for m in found:
            if not unused and not self.inline:
                break
            key = _SPACES.sub(" ", m.group(0)).casefold()
            target = self._by_key[key]
            if m.group(0).isupper() and sum(c.isalpha() for c in m.group(0)) > 1 and key not in self._written_in_capitals:
                target = target.upper()  # a term the text writes in capitals ("the SAVE button"): its target too
            stand_in = target if self.inline else unused.pop(0)
            terms[stand_in] = target
            if not text[: m.start()].strip() and m.group(0)[:1].isupper():
                capitalised.add(stand_in)
            before, after = padding(text, m.start(), m.end())  # the stand-in a word of its own
            out += [text[last : m.start()], before, stand_in, after]
            last = m.end()
        out.append(text[last:])
        return Marked("".join(out), terms, frozenset(capitalised))

    @staticmethod
    def restore(marked: Marked, translation: str) -> Restored:
        """The translation with every stand-in replaced by its target term.  A stand-in the
        translation lost: its term is appended in parentheses (before a final full stop, question
        or exclamation mark) and counted as missing."""
        if not marked.terms:
            return Restored(translation, 0, 0)
        start = translation.lstrip(" \"'«“¿¡")

        def found(s: str) -> bool:  # (a term that begins the translation may have been capitalised)
            return bool(_word(s).search(translation) or _word(s[:1].upper() + s[1:]).match(start))

        present = [s for s in marked.terms if found(s)]
        lost = [t for s, t in marked.terms.items() if s not in present]
        if present:  # one pass, so that a target term holding another stand-in is left alone
            names = "|".join(re.escape(s) for s in sorted(present, key=len, reverse=True))
            pattern = re.compile(_WORD_EDGE_BEFORE + f"({names})" + _WORD_EDGE_AFTER)

            def put(m: re.Match) -> str:
                term = marked.terms[m.group(1)]
                at_start = not translation[: m.start()].strip(" \"'«“¿¡")
                return term[:1].upper() + term[1:] if at_start and m.group(1) in marked.capitalised else term

            translation = pattern.sub(put, translation)
        if lost:
            body = translation.rstrip()
            end = len(body)
            while end > 0 and body[end - 1] in ".!?… ":
                end -= 1
            extra = " ".join(f"({t})" for t in lost)
            translation = f"{body[:end]} {extra}{body[end:]}".lstrip()
        return Restored(translation, len(present), len(lost))


def load_glossary(path: str | Path, limits: GlossaryLimits = GlossaryLimits()) -> Glossary:
    """A glossary file: a JSON object (``.json``) or ``source<TAB>target`` lines (anything else)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise GlossaryError(f"{path}: not UTF-8") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as e:
            raise GlossaryError(f"{path}: not JSON ({e})") from None
        try:
            return Glossary.from_mapping(data, limits)
        except GlossaryError as e:
            raise GlossaryError(f"{path}: {e}") from None
    return Glossary.from_tsv(text, limits, name=str(path))
