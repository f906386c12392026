"""Build the broad EN-FR or EN-DE corpus: every source extracted, cleaned, filtered, deduplicated, held out.

Sources (``SOURCES``): ``ui`` (message catalogs of applications), ``dialogue`` (the catalogs of
games with campaigns, dialogue and narrative: Wesnoth, FreedroidRPG, Cataclysm, Widelands
scenarios, UFO:AI, Warzone 2100), ``help`` (GNOME help pages), ``dict`` (FreeDict), ``ddtp``
(package descriptions, ``rendition.model.training.data``), and two of daily life (``daily``): ``lexicon``
(the daily-life lexicon's nouns with their articles, week days, months) and ``realised``
(sentences of daily life realised in both languages by pyrealb from one plan).  Training pairs of
``ui``, ``dialogue`` and ``dict`` whose English is a set phrase of conversation ("How are you?",
"Thank you!") are relabelled ``phrases`` (``phrases.py``), to be weighted in training.

``--pair en-de`` builds the same sources where they have a German side (``ui``, ``dialogue``,
``help``, ``dict``, ``ddtp``) from the packages of its own manifest, by the same rules, plus
``cldr`` (CLDR's names of languages, territories, days, months and emoji, ``cldr.py``); the daily-life,
conversation and verbatim sources are written for French and stay in en-fr.

Held out: a pair goes to valid/test by the hash of its normalised English (per-source fractions),
and no training pair may share its normalised English or French with any held-out pair of any
source, nor with the DDTP valid/test splits.  Committed: ``data/splits/{valid,test}.<source>.<pair>.tsv``
and the mixed everyday set ``{valid,test}.everyday.<pair>.tsv`` (dialogue lines, and short UI
sentences: 3-15 words ending in . ! or ?).  Not committed: ``data/build/corpus/train.<pair>.tsv``
(``source<TAB>English<TAB>other language``).
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

from rendition.model.training import data
from rendition.model.training.corpus import (
    cldr,
    conversation,
    daily,
    debian,
    freedict,
    gettext_source,
    mallard,
    phrases,
    verbatim,
)
from rendition.model.training.corpus.clean import language_ok
from rendition.model.training.corpus.rows import Row, write_rows
from rendition.model.training.data import (
    REPO_DATA,
    SPLITS_DIR,
    _bucket,
    build_pairs,
    default_ddtp_dir,
    normalise,
    read_tsv,
)

CORPUS_DIR = REPO_DATA / "build" / "corpus"
PAIRS = ("en-fr", "en-de")
SOURCES = ("ui", "dialogue", "help", "dict", "ddtp", "lexicon", "realised", "conversation", "convextra", "convclock", "convset", "verbatim")
PAIR_SOURCES = {"en-fr": SOURCES, "en-de": ("ui", "dialogue", "help", "dict", "ddtp", "cldr")}
# never held out by hash here: DDTP has its own splits, the daily-life and verbatim rows are synthetic,
# and the conversation frames hold out their own instances (``conversation.split_of``)
TRAIN_ONLY = ("ddtp", "lexicon", "realised", "conversation", "convextra", "convclock", "convset", "verbatim", "cldr")
# fraction of each source's distinct English held out for valid and for test (each)
HELD_OUT = {"ui": 0.004, "dialogue": 0.03, "help": 0.03, "dict": 0.01}
MAX_SPLIT = 1500  # committed pairs per source and split
EVERYDAY = 1000
_DIALOGUE = re.compile(r"^(wesnoth-(?!lib$|editor$|help$|multiplayer$|units$|wc$).+|freedroidrpg-dialogs|cataclysm-dda|scenario_.+|tribes_encyclopedia|ufoai|warzone2100)$")
_SENTENCE_END = re.compile(r"[.!?]$")



def pair_language(pair: str) -> str:
    """"en-de" -> "de": the language a pair translates English to and from."""
    if pair not in PAIRS:
        raise ValueError(f"corpus pair {pair!r}: expected one of {', '.join(PAIRS)}")
    return pair.split("-")[1]


def _catalog_rows(pkg_dir: Path, lang: str = "fr") -> list[Row]:
    rows = []
    for mo in gettext_source.catalogs(pkg_dir, lang):
        src = "dialogue" if _DIALOGUE.match(mo.stem) else "ui"
        rows += [(src, e, x) for e, x in gettext_source.read_catalog(mo, lang)]
    return rows


def extract_all(cache: Path, workers: int = 2, lang: str = "fr", refresh_pins: bool = False) -> list[Path]:
    pkgs = debian.fetch(cache, debian.manifest_path(lang), lang, refresh_pins)
    dest = cache / "extract"
    with ProcessPoolExecutor(workers) as ex:
        return list(ex.map(debian.extract, [deb for _, deb in pkgs], [dest] * len(pkgs), chunksize=8))


def dictionary_rows(pkg_dir: Path, lang: str = "fr") -> Iterator[Row]:
    """FreeDict's pairs, without those that translate a first name ("Peter" / "Pierre", "John" / "Johann")."""
    return (("dict", e, x) for e, x in freedict.read_dictionaries(pkg_dir, lang) if not verbatim.maps_name(e, x, lang))


def raw_rows(
    pkg_dirs: list[Path], ddtp_dir: Path, workers: int = 2, lexicon: daily.SentenceLexicon | None = None, lang: str = "fr"
) -> Iterator[Row]:
    with ProcessPoolExecutor(workers) as ex:
        for rows in ex.map(partial(_catalog_rows, lang=lang), pkg_dirs, chunksize=16):
            yield from rows
    for d in pkg_dirs:
        yield from (("help", e, x) for _, e, x in mallard.read_help(d, lang))
        yield from dictionary_rows(d, lang)
    yield from (("ddtp", p.src, p.tgt) for p in build_pairs(ddtp_dir, lang))
    if lang != "fr":  # the daily-life, conversation and verbatim sources are written for French
        if pkg_dirs:
            yield from (("cldr", e, x) for e, x in cldr.name_pairs(pkg_dirs[0].parent, lang))
        return
    if pkg_dirs:
        lex = lexicon or daily.sentence_lexicon(pkg_dirs[0].parent)
        yield from daily.corpus_rows(pkg_dirs[0].parent, lexicon=lex)
        yield from conversation.corpus_rows(conversation.nouns(lex))
    yield from verbatim.corpus_rows()


def _train_only(src: str) -> bool:
    """Whether a row's source is never held out: ``lexicon>fr`` (a one-way row) as ``lexicon``."""
    return data.split_source(src)[0] in TRAIN_ONLY


def _lang_filter(rows: list[Row], lang: str = "fr") -> list[bool]:
    return [language_ok(e, "en") and language_ok(x, lang) for _, e, x in rows]


def dedup_and_filter(rows: Iterable[Row], workers: int = 2, lang: str = "fr") -> tuple[list[Row], Counter]:
    counts: Counter = Counter()
    seen: set[tuple[str, str]] = set()
    kept: list[Row] = []
    for src, e, x in rows:
        counts[src, "raw"] += 1
        key = (normalise(e), normalise(x))
        if key in seen:
            continue
        seen.add(key)
        counts[src, "distinct"] += 1
        kept.append((src, e, x))
    chunks = [kept[i : i + 20_000] for i in range(0, len(kept), 20_000)]
    with ProcessPoolExecutor(workers) as ex:
        oks = [ok for part in ex.map(partial(_lang_filter, lang=lang), chunks) for ok in part]
    out = [r for r, ok in zip(kept, oks) if ok or _train_only(r[0])]
    for r in out:
        counts[r[0], "language-checked"] += 1
    return out, counts


def split(rows: list[Row], splits_dir: Path, pair: str = "en-fr") -> tuple[dict[str, list[Row]], Counter]:
    held: dict[str, list[Row]] = {}
    train: list[Row] = []
    for r in rows:
        src, e, _ = r
        if _train_only(src):
            train.append(r)
            continue
        b = _bucket(e)
        frac = HELD_OUT[src]
        name = f"test.{src}" if b < frac else f"valid.{src}" if b < 2 * frac else None
        if name:
            held.setdefault(name, []).append(r)
        else:
            train.append(r)
    blocked_en, blocked_xx = set(), set()
    for rs in held.values():
        blocked_en |= {normalise(e) for _, e, _ in rs}
        blocked_xx |= {normalise(x) for _, _, x in rs}
    # every committed split (DDTP's, daily life's, and an earlier build's of each source) stays out too
    for path in sorted(splits_dir.glob(f"*.{pair}.tsv")) if splits_dir.is_dir() else []:
        if not path.name.startswith(("valid.", "test.")):
            continue
        for p in read_tsv(path):
            blocked_en.add(normalise(p.src))
            blocked_xx.add(normalise(p.tgt))
    counts: Counter = Counter()
    out_train = []
    for r in train:
        if normalise(r[1]) in blocked_en or normalise(r[2]) in blocked_xx:
            counts[r[0], "dropped (held-out overlap)"] += 1
            continue
        out_train.append(r)
        counts[r[0], "train"] += 1
    # committed held-out sets: one pair per English, capped, in hash order (deterministic)
    splits: dict[str, list[Row]] = {"train": out_train}
    for name, rs in held.items():
        uniq: dict[str, Row] = {}
        for r in sorted(rs, key=lambda r: _bucket(r[1] + "\t" + r[2])):
            uniq.setdefault(normalise(r[1]), r)
        splits[name] = list(uniq.values())[:MAX_SPLIT]
        counts[name.split(".")[1], name.split(".")[0]] = len(splits[name])
    for name in ("valid", "test"):
        pool = [r for r in splits.get(f"{name}.dialogue", []) if 2 <= len(r[1].split()) <= 25]
        pool += [
            r for r in splits.get(f"{name}.ui", []) if 3 <= len(r[1].split()) <= 15 and _SENTENCE_END.search(r[1]) and r[1][0].isupper()
        ]
        pool.sort(key=lambda r: _bucket(r[1]))
        splits[f"{name}.everyday"] = pool[:EVERYDAY]
        counts["everyday", name] = len(splits[f"{name}.everyday"])
    return splits, counts


def write_splits(splits: dict[str, list[Row]], splits_dir: Path, rewrite: bool = False, pair: str = "en-fr") -> list[Path]:
    """Write each held-out split where no file is committed (``rewrite``: over it too); the paths
    written."""
    written = []
    for name, rs in splits.items():
        path = splits_dir / f"{name}.{pair}.tsv"
        if rewrite or not path.exists():
            write_rows(path, rs, with_source=False)
            written.append(path)
    return written


def build(
    cache: Path,
    ddtp_dir: Path | None = None,
    splits_dir: Path = SPLITS_DIR,
    corpus_dir: Path = CORPUS_DIR,
    rewrite_splits: bool = False,
    pair: str = "en-fr",
    refresh_pins: bool = False,
) -> Counter:
    """Write the training corpus and its counts; the held-out splits only where no file is
    committed (``rewrite_splits``: write them all).  Training never holds a pair of a committed
    split, whichever build chose it.  ``refresh_pins``: see ``debian.fetch``."""
    lang = pair_language(pair)
    pkg_dirs = extract_all(cache, lang=lang, refresh_pins=refresh_pins)
    lex = None
    if lang == "fr":
        lex = daily.sentence_lexicon(cache / "extract")
        # (the conversational splits first, so that training leaves out their sentences as it does any committed split's)
        conversation.write_splits(conversation.nouns(lex), splits_dir, rewrite_splits)
    rows, counts = dedup_and_filter(raw_rows(pkg_dirs, ddtp_dir or default_ddtp_dir(), lexicon=lex, lang=lang), lang=lang)
    splits, c2 = split(rows, splits_dir, pair)
    counts.update(c2)
    train = list(phrases.mark(splits.pop("train")))  # (catalog pairs of set phrases: their own source)
    counts["phrases", "train"] = sum(r[0] == phrases.SOURCE for r in train)
    random.Random(0).shuffle(train)
    write_rows(corpus_dir / f"train.{pair}.tsv", train, with_source=True)
    write_splits(splits, splits_dir, rewrite_splits, pair)
    table = {f"{s}/{k}": v for (s, k), v in sorted(counts.items())}
    (corpus_dir / ("counts.json" if pair == "en-fr" else f"counts.{pair}.json")).write_text(json.dumps(table, indent=1))
    return counts


def data_main(argv: list[str] | None = None) -> None:
    """``rendition data``: the DDTP splits (``rendition.model.training.data.main``), or with ``--corpus`` first
    the broad corpus (``main``).  The dispatch lives here, not in ``data``: the corpus builds on
    ``data``, so ``data`` does not import it (no import cycle)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--corpus"]:
        return main(argv[1:])
    return data.main(argv)


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="rendition data --corpus", description="build the broad EN-FR or EN-DE corpus from Debian packages")
    ap.add_argument("--pair", default="en-fr", choices=PAIRS, help="en-de: the sources with a German side, from the packages of data/corpus/manifest.en-de.tsv")
    ap.add_argument("--cache", type=Path, default=None, help="downloaded .deb files and their extracted members (default: data/build/debian, en-de: data/build/debian.en-de)")
    ap.add_argument("--ddtp", type=Path, default=None, help="folder with Translation-{en,fr,de}.xz (default: as `rendition data`)")
    ap.add_argument("--rewrite-splits", action="store_true", help="write the held-out splits of this build over the committed ones")
    ap.add_argument("--refresh-pins", action="store_true",
                    help="where the archive no longer has a pinned version (a point release replaced it), take its current one and rewrite the pin")
    a = ap.parse_args(argv)
    cache = a.cache or REPO_DATA / "build" / ("debian" if a.pair == "en-fr" else f"debian.{a.pair}")
    counts = build(cache, a.ddtp, rewrite_splits=a.rewrite_splits, pair=a.pair, refresh_pins=a.refresh_pins)
    for src in PAIR_SOURCES[a.pair] + ("phrases", "everyday"):
        print(src, " ".join(f"{k}={v}" for (s, k), v in sorted(counts.items()) if s == src))
