"""General English text that a Debian system ships, for the encoder's distillation corpus.

The DDTP package descriptions are a narrow domain (software summaries).  Issue 4 asks for more
varied English as well: the ``fortunes`` databases (``/usr/share/games/fortunes``; install with
``apt-get install fortunes fortunes-min``) and manual pages (``/usr/share/man``).  Both are read
locally; nothing is downloaded.  Sentences are cut out with a simple splitter, kept when they have
5-40 words and mostly letters, and deduplicated; anything whose normalised form is in ``exclude``
(the held-out English of the valid/test splits) is dropped so the evaluation stays held out.

WordNet (``apt-get install wordnet-base``: ``/usr/share/wordnet/data.*``) adds everyday English that
neither source has: its ~48k usage examples ("she lived on the other side of the street from me",
"don't be fresh with me") and its ~136k glosses (short definitions, like dictionary and UI text).
"""

from __future__ import annotations

import gzip
import random
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

FORTUNE_DIRS = (Path("/usr/share/games/fortunes"), Path("/usr/share/fortunes"))
MAN_DIR = Path("/usr/share/man")
WORDNET_DIR = Path("/usr/share/wordnet")

_SENT_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_ROFF_ESCAPE = re.compile(r"\\(f[BIRPC0-9]|f\(..|f\[[^]]*\]|\(..|\[[^]]*\]|[-&|^e0 ~]|s[+-]?\d|\*.)")


def normalise(s: str) -> str:
    return " ".join(s.lower().split())


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_END.split(" ".join(text.split())) if s.strip()]


def keep(s: str) -> bool:
    words = s.split()
    if not 5 <= len(words) <= 40:
        return False
    letters = sum(c.isalpha() for c in s)
    return letters >= 0.7 * len(s.replace(" ", "")) and s.isascii()


def fortune_texts(dirs: Iterable[Path] | None = None) -> Iterator[str]:
    """Each fortune (entries separated by a line holding '%'), offensive ones excluded."""
    for d in FORTUNE_DIRS if dirs is None else dirs:
        if not d.is_dir():
            continue
        for path in sorted(d.iterdir()):
            if path.suffix or not path.is_file() or "off" in path.parts:
                continue
            try:
                raw = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for entry in raw.split("\n%\n"):
                # attributions ("-- Mark Twain") and indented verse are not prose
                lines = [ln for ln in entry.splitlines() if ln.strip() and not ln.strip().startswith("--")]
                if lines and lines != ["%"]:
                    yield " ".join(lines)


def _unescape(line: str) -> str:
    return _ROFF_ESCAPE.sub(lambda m: "-" if m.group(1) == "-" else "", line)


def roff_to_text(src: str) -> str:
    """Crude roff -> prose: drop requests/macros and comments, strip inline escapes."""
    out: list[str] = []
    for line in src.splitlines():
        if line.startswith((".", "'")):
            if line[:3] in (".PP", ".LP", ".P ", ".SH", ".TP", ".IP", ".SS") or line.strip() in (".P", ".PP"):
                out.append("\n\n")
            elif line.startswith((".B ", ".I ", ".BR ", ".IR ", ".RB ", ".RI ", ".BI ", ".IB ")):
                out.append(_unescape(" ".join(w.strip('"') for w in line.split()[1:])))
            continue
        out.append(_unescape(line))
    return "\n".join(out)


def manpage_texts(root: Path | None = None, max_pages: int = 4000, seed: int = 0) -> Iterator[str]:
    """Paragraphs of English manual pages (sections 1, 5, 7, 8; no translated pages)."""
    root = MAN_DIR if root is None else root
    pages = sorted(p for sec in ("man1", "man5", "man7", "man8") for p in (root / sec).glob("*.gz"))
    random.Random(seed).shuffle(pages)
    # families of generated pages (gcloud_*, aws-*) would swamp the rest: a few of each family
    family: dict[str, int] = {}
    kept = []
    for p in pages:
        fam = re.split(r"[_.-]", p.name, maxsplit=1)[0]
        family[fam] = family.get(fam, 0) + 1
        if family[fam] <= 3:
            kept.append(p)
    pages = kept
    for path in pages[:max_pages]:
        try:
            src = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        except (OSError, EOFError):
            continue
        if src.startswith(".so "):  # a link to another page
            continue
        yield from roff_to_text(src).split("\n\n")


def wordnet_texts(root: Path | None = None) -> Iterator[tuple[str, str]]:
    """("example" | "gloss", text) for each usage example and gloss of WordNet's ``data.*`` files.

    A synset line ends in ``| gloss; "example"; "example"``: the quoted parts are examples, the
    rest the definition.  Examples of 3+ words and glosses of 4+ words are kept."""
    root = WORDNET_DIR if root is None else root
    for pos in ("noun", "verb", "adj", "adv"):
        path = root / f"data.{pos}"
        if not path.is_file():
            continue
        for line in path.read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or "|" not in line:  # the licence header
                continue
            for part in line.split("|", 1)[1].split(";"):
                part = part.strip()
                if part.startswith('"'):
                    text = part.strip('" ')
                    if len(text.split()) >= 3:
                        yield "example", text
                elif len(part.split()) >= 4:
                    yield "gloss", part


def general_english(max_sentences: int, exclude: set[str] = frozenset(), seed: int = 0) -> list[str]:
    """Up to ``max_sentences`` unique sentences, half from fortunes and half from man pages when
    both are available, shuffled in a fixed order."""
    seen = set(exclude)
    pools: list[list[str]] = []
    for texts in (fortune_texts(), manpage_texts(seed=seed)):
        pool: list[str] = []
        for text in texts:
            for s in split_sentences(text):
                n = normalise(s)
                if keep(s) and n not in seen:
                    seen.add(n)
                    pool.append(s)
        pools.append(pool)
    rng = random.Random(seed)
    out: list[str] = []
    share = max_sentences // max(1, sum(1 for p in pools if p))
    for pool in pools:
        rng.shuffle(pool)
        out += pool[:share]
    rest = [s for pool in pools for s in pool[share:]]
    rng.shuffle(rest)
    out += rest[: max_sentences - len(out)]
    rng.shuffle(out)
    return out
