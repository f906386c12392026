"""Sentence splitters for the translation path, on held-out DDTP descriptions (both sides).

Consecutive test lines (each given a final stop if it has none) are joined with one space into
paragraphs of five; a splitter should cut at the four joins (recall) and rarely inside a line.
A cut inside a line is not always wrong (some descriptions hold several sentences), so both are
reported, with the time per paragraph.

    pip install pysbd        # only for this comparison; the service uses sentencex
    python benchmarks/bench_segment.py
"""

from __future__ import annotations

import time

from sentencex import segment

from rendition.model.training.data import SPLITS_DIR, read_tsv


def spans(pieces: list[str]) -> set[int]:
    """Character offsets of the cuts (the splitters keep every character)."""
    cuts, pos = set(), 0
    for p in pieces[:-1]:
        pos += len(p)
        cuts.add(pos)
    return cuts


def run(name: str, split, lines: list[str]) -> None:
    found = missed = inside = 0
    t0 = time.perf_counter()
    paragraphs = [lines[i : i + 5] for i in range(0, len(lines) - 4, 5)]
    for para in paragraphs:
        text, joins, pos = "", set(), 0
        for k, line in enumerate(para):
            text += line + (" " if k < 4 else "")
            pos += len(line) + 1
            if k < 4:
                joins.add(pos)
        cuts = spans(split(text))
        # a cut within one character of a join (before or after the space) counts
        hit = {j for j in joins if {j - 1, j} & cuts}
        found += len(hit)
        missed += len(joins) - len(hit)
        inside += len({c for c in cuts if c not in joins and c + 1 not in joins})
    dt = time.perf_counter() - t0
    total = found + missed
    print(
        f"{name:10s} boundaries found {found}/{total} ({100 * found / total:.1f}%)  cuts inside lines {inside}  "
        f"{1e3 * dt / len(paragraphs):.2f} ms per paragraph"
    )


def main() -> None:
    import pysbd

    pairs = read_tsv(SPLITS_DIR / "test.en-fr.tsv")
    for lang, lines in (("en", [p.src for p in pairs]), ("fr", [p.tgt for p in pairs])):
        lines = [x if x.rstrip().endswith((".", "!", "?")) else x.rstrip() + "." for x in lines]
        print(f"-- {lang}: {len(lines)} lines")
        run("sentencex", lambda t, lang=lang: list(segment(lang, t)), lines)
        seg = pysbd.Segmenter(language=lang, clean=False)
        run("pysbd", seg.segment, lines)


if __name__ == "__main__":
    main()
