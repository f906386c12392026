"""The corpus file (``rendition data --corpus``): one row a line, ``source<TAB>English<TAB>French``
(``German`` in the en-de corpus); a source ``NAME>fr`` / ``NAME>en`` is trained in that direction
only (``rendition.model.training.data.split_source``)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

Row = tuple[str, str, str]  # source, English, French


def read_rows(path: Path, limit: int | None = None) -> Iterator[Row]:
    """The rows of the corpus at ``path`` (the first ``limit`` when given); a line without three
    columns is a ValueError naming it."""
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if limit is not None and i >= limit:
                return
            cols = line.rstrip("\n").split("\t", 2)
            if len(cols) < 3:
                raise ValueError(f"{path}:{i + 1}: expected origin<TAB>english<TAB>french")
            yield cols[0], cols[1], cols[2]


def write_rows(path: Path, rows: Iterable[Row], with_source: bool) -> None:
    """``rows`` into the file at ``path`` (its folder made if missing); ``with_source`` False: the
    English and French columns only (a held-out split's file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for s, e, x in rows:
            f.write(f"{s}\t{e}\t{x}\n" if with_source else f"{e}\t{x}\n")


def cap_sources(rows: Iterable[Row], caps: Mapping[str, int], seed: int = 0) -> list[Row]:
    """``rows`` with at most ``caps[name]`` rows of each source named there (``dict`` counts
    ``dict>en`` too), in their order: a uniform choice among that source's rows, the same for the
    same rows and ``seed``.  Sources not named keep all their rows."""
    rows = list(rows)
    by_source: dict[str, list[int]] = {}
    for i, (src, _, _) in enumerate(rows):
        name = src.partition(">")[0]
        if name in caps:
            by_source.setdefault(name, []).append(i)
    rng = random.Random(seed)
    dropped: set[int] = set()
    for name, idx in sorted(by_source.items()):
        if len(idx) > caps[name]:
            dropped |= set(idx) - set(rng.sample(idx, caps[name]))
    return [r for i, r in enumerate(rows) if i not in dropped]
