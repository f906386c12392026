"""English -> French noun translations triangulated through Apertium's bilingual dictionaries.

Debian bookworm ships no English-French Apertium pair, but it ships pairs that meet through a
third language: English-Spanish with Spanish-French (``apertium-eng-spa``, ``apertium-fr-es``),
English-Catalan with Catalan-French (``apertium-eng-cat``, ``apertium-fra-cat``) and
English-Esperanto with French-Esperanto (``apertium-eo-en``, ``apertium-eo-fr``).  Each compiled
bilingual dictionary (``*.autobil.bin``) is looked up with ``lt-proc -b`` from ``lttoolbox``:
``^dog<n><sg>$`` -> ``^dog<n><sg>/perro<n><GD><sg>$``, then ``^perro<n><GD><sg>$`` ->
``chien<n><GD><sg>``.  The French-Esperanto pair runs one way only, so it is inverted by looking
up every French candidate noun.

A French noun that two pivots give for the same English noun (or one pivot and FreeDict) is
*confirmed*.  These dictionaries are written for running text, so their first translation is the
everyday sense ("plate" -> "plato" -> "assiette", where FreeDict's most frequent word is
"plaque"), and they hold the words of a house or a town that FreeDict lacks (supermarket, fridge,
wedding).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

APERTIUM_PACKAGES = ("apertium-eng-spa", "apertium-fr-es", "apertium-eng-cat", "apertium-fra-cat", "apertium-eo-en", "apertium-eo-fr")
# pivot -> (English -> pivot dictionary, pivot -> French dictionary); "fr-eo" is inverted
PIVOTS = {
    "es": ("apertium-eng-spa/eng-spa.autobil.bin", "apertium-fr-es/es-fr.autobil.bin"),
    "ca": ("apertium-eng-cat/eng-cat.autobil.bin", "apertium-fra-cat/cat-fra.autobil.bin"),
    "eo": ("apertium-eo-en/en-eo.autobil.bin", "apertium-eo-fr/fr-eo.autobil.bin"),
}
_UNIT = re.compile(r"\^([^$]*)\$")
_LEMMA = re.compile(r"^([^<@#*][^<]*)(<.*)?$")


def lt_proc() -> str:
    exe = shutil.which("lt-proc")
    if exe is None:
        raise RuntimeError("lt-proc not found: install Debian's lttoolbox package (apt-get install lttoolbox)")
    return exe


def lookup(binary: Path, units: Sequence[str]) -> list[list[str]]:
    """``lt-proc -b`` on ``^unit$`` items; for each, its translations (lemma plus tags), in the
    dictionary's order ([] where it has none)."""
    out: list[list[str]] = []
    chunk = 2000
    for i in range(0, len(units), chunk):
        text = " ".join(f"^{u}$" for u in units[i : i + chunk]) + "\n"
        res = subprocess.run([lt_proc(), "-b", str(binary)], input=text, capture_output=True, text=True, check=True)
        got = _UNIT.findall(res.stdout)
        if len(got) != len(units[i : i + chunk]):
            raise RuntimeError(f"lt-proc -b {binary.name}: {len(got)} results for {len(units[i:i + chunk])} inputs")
        for g in got:
            out.append([t for t in g.split("/")[1:] if _LEMMA.match(t)])
    return out


def find(root: Path, rel: str) -> Path:
    """A dictionary under ``root``: installed (``root/usr/share/apertium/...``) or unpacked per
    package (``root/<package>/usr/share/apertium/...``)."""
    direct = root / "usr/share/apertium" / rel
    if direct.exists():
        return direct
    found = next(root.glob(f"*/usr/share/apertium/{rel}"), None)
    if found is None:
        raise FileNotFoundError(f"{rel}: not under {root} (Debian package {rel.split('/')[0]})")
    return found


def _lemma(unit: str) -> str:
    return unit.split("<", 1)[0]


def _gender(unit: str) -> str | None:
    return "f" if "<f>" in unit else "m" if "<m>" in unit else None


def triangulate(
    root: Path, english: Iterable[str], french: dict[str, str], known: Callable[[str], bool] | None = None
) -> dict[str, dict[str, set[str]]]:
    """For each English noun, its French nouns with the pivots that give them:
    ``{"plate": {"assiette": {"es", "eo"}, "plat": {"ca"}}}``.  ``french`` (French noun ->
    gender) is the set of French nouns the realiser knows; other French words are dropped, unless
    ``known`` (default: membership of ``french``) accepts them (a compound whose head it knows)."""
    known = known or french.__contains__
    english = sorted(set(english))
    votes: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for pivot, (to_pivot, to_fr) in PIVOTS.items():
        first = lookup(find(root, to_pivot), [f"{w}<n><sg>" for w in english])
        if pivot == "eo":  # French -> Esperanto only: invert it over the known French nouns
            fr_words = sorted(french)
            back: dict[str, list[str]] = defaultdict(list)
            for f, ts in zip(fr_words, lookup(find(root, to_fr), [f"{f}<n><{french[f]}><sg>" for f in fr_words]), strict=True):
                for t in ts:
                    back[_lemma(t)].append(f)
            for en, ts in zip(english, first, strict=True):
                for t in ts:
                    for f in back.get(_lemma(t), ()):
                        votes[en][f].add(pivot)
            continue
        queries: list[tuple[str, str]] = []
        for en, ts in zip(english, first, strict=True):
            for t in ts:
                lemma, tags = _lemma(t), t[len(_lemma(t)) :]
                genders = ["<m>", "<f>"] if "<GD>" in tags or _gender(t) is None else [f"<{_gender(t)}>"]
                queries += [(en, f"{lemma}<n>{g}<sg>") for g in genders]
        for (en, _), ts in zip(queries, lookup(find(root, to_fr), [q for _, q in queries]), strict=True):
            for t in ts:
                f = _lemma(t)
                if known(f):
                    votes[en][f].add(pivot)
    return {en: dict(fs) for en, fs in votes.items()}
