"""Several translators served together (the Argos / LibreTranslate model): each translator is a
*pair package*, a model directory whose ``config.json`` names its languages, and a request is
routed by its (source, target) to the translator that has both; when none has both but English
bridges them (source -> en in one, en -> target in another), it goes through English in two legs.

``PairTable`` holds the routing and refuses two translators that serve the same direction;
``package_dirs`` finds the pair packages of a models directory (every subdirectory with a
translator ``config.json``).  Nothing here loads weights: the service and ``rendition translate``
load the translators and put them in a table.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

PIVOT = "en"  # the language a pivot goes through

T = TypeVar("T")
Direction = tuple[str, str]


class DuplicateDirection(ValueError):
    """Two translators serve the same direction."""


class UnsupportedPair(ValueError):
    """No translator, nor two through English, translates this pair (the message names those loaded)."""


def directions(languages: Sequence[str]) -> list[Direction]:
    """Every direction a translator of ``languages`` translates (each language to each other), in
    the languages' alphabetical order."""
    langs = sorted(languages)
    return [(a, b) for a in langs for b in langs if a != b]


def read_languages(model_dir: Path) -> tuple[str, ...]:
    """The languages a translator directory's ``config.json`` names."""
    with open(Path(model_dir) / "config.json", encoding="utf-8") as f:
        return tuple(json.load(f).get("languages", ()))


def is_translator_dir(path: Path) -> bool:
    """A directory holding a translator's ``config.json`` (a config with ``languages``)."""
    config = path / "config.json"
    if not config.is_file():
        return False
    try:
        return bool(json.loads(config.read_text(encoding="utf-8")).get("languages"))
    except (OSError, ValueError, AttributeError):
        return False


def package_dirs(models_dir: Path) -> list[Path]:
    """The pair packages of ``models_dir``: its subdirectories holding a translator ``config.json``,
    in name order."""
    if not models_dir.is_dir():
        raise FileNotFoundError(f"models directory not found: {models_dir}")
    return [d for d in sorted(models_dir.iterdir()) if d.is_dir() and is_translator_dir(d)]


def split_paths(value: str) -> list[Path]:
    """A list of paths written as one string: separated by ``os.pathsep`` or commas."""
    parts = (p.strip() for chunk in value.split(os.pathsep) for p in chunk.split(","))
    return [Path(p) for p in parts if p]


@dataclass(frozen=True)
class Leg(Generic[T]):
    """One translator's part of a route: ``translator`` translates ``source`` -> ``target``."""

    translator: T
    source: str
    target: str


class PairTable(Generic[T]):
    """The translators in load order, each with its languages; ``route`` picks one (direct) or two
    (through English) for a pair."""

    def __init__(self, translators: Iterable[tuple[T, Sequence[str]]], names: Sequence[str] | None = None):
        """``names`` (one per translator, e.g. its directory) name them in the duplicate-direction error."""
        self.entries = [(t, tuple(sorted(langs))) for t, langs in translators]  # (a config's order is no order)
        self.direct: dict[Direction, T] = {}
        owner: dict[Direction, str] = {}
        for k, (translator, langs) in enumerate(self.entries):
            name = names[k] if names else f"translator {k + 1}"
            for d in directions(langs):
                if d in owner:
                    raise DuplicateDirection(
                        f"two translators serve {d[0]}->{d[1]}: {owner[d]} and {name}; each direction must come from "
                        "one translator (remove one of them from RENDITION_TRANSLATOR_PATH / RENDITION_MODELS_DIR)"
                    )
                owner[d], self.direct[d] = name, translator

    @property
    def languages(self) -> tuple[str, ...]:
        """Every language of a loaded translator, in load order."""
        return tuple(dict.fromkeys(code for _, langs in self.entries for code in langs))

    def route(self, source: str, target: str) -> list[Leg[T]]:
        """One leg when a translator has both languages, two through English when that bridges
        them; ``UnsupportedPair`` (naming the loaded pairs) otherwise."""
        if (source, target) in self.direct:
            return [Leg(self.direct[source, target], source, target)]
        first, second = self.direct.get((source, PIVOT)), self.direct.get((PIVOT, target))
        if source != target and first is not None and second is not None:
            return [Leg(first, source, PIVOT), Leg(second, PIVOT, target)]
        via = self.pivots()
        raise UnsupportedPair(
            f"unsupported language pair {source}-{target}; supported: {', '.join(f'{a}-{b}' for a, b in self.direct)}"
            + (f"; through English: {', '.join(f'{a}-{b}' for a, b in via)}" if via else "")
        )

    def pivots(self) -> list[Direction]:
        """The directions served only through English."""
        langs = self.languages
        return [
            (a, b) for a in langs for b in langs
            if a != b and (a, b) not in self.direct and (a, PIVOT) in self.direct and (PIVOT, b) in self.direct
        ]  # fmt: skip

    def reachable(self) -> list[Direction]:
        """Every direction served, direct or through English."""
        return [*self.direct, *self.pivots()]

    def targets(self, source: str) -> list[str]:
        """The languages ``source`` translates into (direct or through English), in load order."""
        reach = set(self.reachable())
        return [t for t in self.languages if (source, t) in reach]
