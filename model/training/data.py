"""Debian DDTP package-description translations -> aligned, cleaned, split parallel text.

A DDTP ``Translation-<lang>`` file holds RFC822-style records (``Package``, ``Description-md5``,
``Description-<lang>``).  English and translated records are joined on ``Description-md5``.  A
description is a one-line summary followed by paragraphs separated by lines holding a single
``.``; the summary pairs with the summary, paragraphs pair one to one when both sides have the
same count, and are split further into sentences (and list items) when both sides split into the
same number of pieces.

The held-out split is decided by a hash of the *normalised English source* (case folded,
whitespace collapsed), so a source sentence is in exactly one of train/valid/test for every
language pair, and the split is deterministic.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import random
import re
import shutil
import subprocess
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

LANGS = ("fr", "de")
REPO_DATA = Path(__file__).resolve().parents[2] / "data"
SPLITS_DIR = REPO_DATA / "splits"

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"«(\[]?[A-Z0-9À-ÖØ-Þ])")
_BULLET = re.compile(r"^\s*[*\-+o•]\s+")
_WS = re.compile(r"\s+")


def default_ddtp_dir() -> Path:
    """Where Debian bookworm's DDTP files (``Translation-{en,fr,de}.xz``) are read from unless a
    command names a folder: ``$RENDITION_DDTP_DIR``, else ``ddtp-bookworm`` in the user's data
    directory (``$XDG_DATA_HOME/rendition``, by default ``~/.local/share/rendition``), where
    ``rendition data --fetch`` puts them."""
    if os.environ.get("RENDITION_DDTP_DIR"):
        return Path(os.environ["RENDITION_DDTP_DIR"]).expanduser()
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data_home / "rendition" / "ddtp-bookworm"


@dataclass(frozen=True)
class Pair:
    src: str  # English
    tgt: str  # the other language


def parse_ddtp(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Yield (md5, description text with newlines) from a DDTP Translation file."""
    md5: str | None = None
    desc: list[str] | None = None
    for raw in lines:
        line = raw.rstrip("\n")
        if not line.strip():
            if md5 and desc:
                yield md5, "\n".join(desc)
            md5, desc = None, None
            continue
        if line.startswith("Description-md5:"):
            md5 = line.split(":", 1)[1].strip()
        elif line.startswith("Description-"):
            desc = [line.split(":", 1)[1].strip()]
        elif line.startswith(" ") and desc is not None:
            desc.append(line[1:])
    if md5 and desc:
        yield md5, "\n".join(desc)


def read_ddtp(path: Path) -> dict[str, str]:
    with lzma.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return dict(parse_ddtp(f))


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch)[0] != "C" or ch in "\t\n")
    return _WS.sub(" ", text).strip()


def _paragraphs(desc: str) -> list[list[str]]:
    """Split a description body into paragraphs, each a list of raw lines."""
    lines = desc.split("\n")
    paras: list[list[str]] = [[lines[0]]]  # the summary is its own paragraph
    cur: list[str] = []
    for line in lines[1:]:
        if line.strip() == ".":
            if cur:
                paras.append(cur)
            cur = []
        else:
            cur.append(line)
    if cur:
        paras.append(cur)
    return paras


def _segments(para: list[str]) -> list[str]:
    """Split a paragraph into list items and sentences."""
    items: list[list[str]] = []
    for line in para:
        if _BULLET.match(line) or not items:
            items.append([_BULLET.sub("", line)])
        else:
            items[-1].append(line)
    out: list[str] = []
    for item in items:
        text = _clean(" ".join(item))
        out.extend(s for s in _SENT_SPLIT.split(text) if s)
    return out


def align(en_desc: str, xx_desc: str) -> list[Pair]:
    """Align one English description with its translation."""
    en_p, xx_p = _paragraphs(en_desc), _paragraphs(xx_desc)
    pairs = [Pair(_clean(en_p[0][0]), _clean(xx_p[0][0]))]
    if len(en_p) != len(xx_p):
        return pairs
    for ep, xp in zip(en_p[1:], xx_p[1:]):
        es, xs = _segments(ep), _segments(xp)
        if len(es) == len(xs):
            pairs.extend(Pair(e, x) for e, x in zip(es, xs))
        else:
            pairs.append(Pair(_clean(" ".join(ep)), _clean(" ".join(xp))))
    return pairs


def keep(p: Pair, max_chars: int = 400) -> bool:
    ls, lt = len(p.src), len(p.tgt)
    if ls < 2 or lt < 2 or ls > max_chars or lt > max_chars:
        return False
    if p.src == p.tgt and ls > 20:  # untranslated
        return False
    ratio = (lt + 5) / (ls + 5)
    return 0.5 <= ratio <= 2.2


def split_source(name: str, lang: str = "fr") -> tuple[str, str]:
    """A corpus row's source column -> (source, direction), in a corpus of English and ``lang``:
    ``"realised"`` -> ("realised", "both"); ``"realised>fr"`` (a row to be learnt only into French)
    -> ("realised", "en-fr"); ``"lexicon>en"`` -> ("lexicon", "fr-en")."""
    source, sep, into = name.partition(">")
    if not sep:
        return source, "both"
    if into not in ("en", lang):
        raise ValueError(f"corpus source {name!r}: expected NAME, NAME>en or NAME>{lang}")
    return source, f"en-{lang}" if into == lang else f"{lang}-en"


def parse_source_counts(spec: str, option: str = "upsample", minimum: int = 1) -> dict[str, int]:
    """``"dialogue=3,help=2"`` -> {"dialogue": 3, "help": 2}: corpus sources with a whole number
    each, at least ``minimum`` (``option`` names the setting in the error)."""
    out = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        name, sep, n = item.partition("=")
        if not sep or not n.strip().isdigit() or int(n) < minimum:
            raise ValueError(f"{option}: expected name=N with N >= {minimum}, got {item!r}")
        out[name.strip()] = int(n)
    return out


def parse_upsample(spec: str) -> dict[str, int]:
    """``"dialogue=3,help=2"`` -> {"dialogue": 3, "help": 2}: corpus sources and how many times each
    is repeated per epoch (sources not named: once)."""
    return parse_source_counts(spec, "upsample", 1)


def parse_cap(spec: str) -> dict[str, int]:
    """``"dict=100000"`` -> {"dict": 100000}: corpus sources and the most rows of each that are
    trained on (``rendition.model.training.corpus.rows.cap_sources``; sources not named: all)."""
    return parse_source_counts(spec, "cap", 0)


def normalise(text: str) -> str:
    return _WS.sub(" ", text.casefold()).strip()


def has_word(text: str, word: str) -> bool:
    """Whether text holds word (case-insensitive, whole words): ``a/b`` is either, ``word*`` a prefix
    (the words a held-out translation must hold: ``evaluate``, the corpus frames)."""
    text = text.lower().replace("\u2019", "'")
    for alt in word.lower().split("/"):
        prefix = alt.endswith("*")
        pattern = r"(?<!\w)" + re.escape(alt.rstrip("*")) + ("" if prefix else r"(?!\w)")
        if re.search(pattern, text):
            return True
    return False


def _bucket(src: str) -> float:
    h = hashlib.sha1(normalise(src).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64


# Fraction of unique English sources held out for each of valid and test; chosen so that
# en-fr gets about 1,500 of each.
HELD_OUT_FRACTION = 0.024


def split_pairs(pairs: list[Pair]) -> dict[str, list[Pair]]:
    """Deterministic split by the hash of the normalised English source.

    valid/test keep one pair per unique source (first seen) and unique targets; train keeps
    every distinct pair whose source is not held out.
    """
    out: dict[str, list[Pair]] = {"train": [], "valid": [], "test": []}
    seen_src: set[str] = set()
    seen_tgt: set[str] = set()
    seen_pair: set[Pair] = set()
    for p in pairs:
        b = _bucket(p.src)
        split = "test" if b < HELD_OUT_FRACTION else "valid" if b < 2 * HELD_OUT_FRACTION else "train"
        if split == "train":
            if p not in seen_pair:
                seen_pair.add(p)
                out["train"].append(p)
            continue
        ns, nt = normalise(p.src), normalise(p.tgt)
        if ns in seen_src or nt in seen_tgt:
            continue
        seen_src.add(ns)
        seen_tgt.add(nt)
        out[split].append(p)
    # No held-out target may appear as a training target either (protects the reverse direction).
    held_tgt = {normalise(p.tgt) for s in ("valid", "test") for p in out[s]}
    out["train"] = [p for p in out["train"] if normalise(p.tgt) not in held_tgt]
    return out


def build_pairs(src_dir: Path, lang: str) -> list[Pair]:
    en = read_ddtp(src_dir / "Translation-en.xz")
    xx = read_ddtp(src_dir / f"Translation-{lang}.xz")
    pairs: list[Pair] = []
    for md5 in sorted(xx):  # sorted: deterministic order
        if md5 in en:
            pairs.extend(p for p in align(en[md5], xx[md5]) if keep(p))
    return pairs


def write_tsv(path: Path, pairs: list[Pair]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for p in pairs:
            f.write(f"{p.src}\t{p.tgt}\n")


def read_tsv(path: Path) -> list[Pair]:
    with path.open(encoding="utf-8") as f:
        return [Pair(*line.rstrip("\n").split("\t", 1)) for line in f if "\t" in line]


def fetch_with_apt(dest: Path, langs: Iterable[str] = ("en",) + LANGS) -> None:
    """Fetch bookworm's Translation-<lang> files from Debian with apt (for users starting from nothing).

    Uses a private apt configuration pointing at deb.debian.org bookworm main, so it works on
    any Debian-like machine with apt installed, as a normal user.
    """
    if shutil.which("apt-get") is None:
        raise RuntimeError("apt-get not found: fetch the DDTP files by hand (see README, Data)")
    dest.mkdir(parents=True, exist_ok=True)
    root = dest / "apt-root"
    for d in ("etc/apt/apt.conf.d", "etc/apt/preferences.d", "var/lib/apt/lists/partial", "var/cache/apt"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/sources.list").write_text(
        "deb [trusted=yes] http://deb.debian.org/debian bookworm main\n"
    )
    opts = [
        f"-oDir={root}",
        "-oDir::State::status=/dev/null",
        "-oAPT::Architecture=amd64",
        f"-oAcquire::Languages={','.join(langs)}",
        "-oAcquire::CompressionTypes::Order::=xz",
        "-oAcquire::GzipIndexes=false",
    ]
    subprocess.run(["apt-get", *opts, "update"], check=True)
    lists = root / "var/lib/apt/lists"
    for lang in langs:
        found = sorted(lists.glob(f"*bookworm_main_i18n_Translation-{lang}*"))
        if not found:
            raise RuntimeError(f"apt did not fetch Translation-{lang}")
        raw = found[0].read_bytes()
        if not found[0].name.endswith(".xz"):
            raw = lzma.compress(raw)
        (dest / f"Translation-{lang}.xz").write_bytes(raw)


def build(src_dir: Path | None = None, out_dir: Path = SPLITS_DIR, langs: Iterable[str] = LANGS) -> dict[str, dict[str, int]]:
    """Rebuild train/valid/test for each en-<lang> pair from the DDTP files in ``src_dir``
    (default: ``default_ddtp_dir()``). Returns counts."""
    src_dir = default_ddtp_dir() if src_dir is None else src_dir
    counts: dict[str, dict[str, int]] = {}
    for lang in langs:
        pairs = build_pairs(src_dir, lang)
        splits = split_pairs(pairs)
        random.Random(0).shuffle(splits["train"])
        for name, ps in splits.items():
            write_tsv(out_dir / f"{name}.en-{lang}.tsv", ps)
        counts[f"en-{lang}"] = {k: len(v) for k, v in splits.items()}
    return counts


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(prog="rendition data", description="Rebuild the DDTP parallel splits (--corpus: the broad corpus).")
    ap.add_argument("--source", type=Path, default=None, help="folder with Translation-{en,fr,de}.xz (default: $RENDITION_DDTP_DIR, else ~/.local/share/rendition/ddtp-bookworm)")
    ap.add_argument("--out", type=Path, default=SPLITS_DIR)
    ap.add_argument("--langs", nargs="+", default=list(LANGS))
    ap.add_argument("--fetch", action="store_true", help="first fetch the files from Debian bookworm with apt into --source")
    a = ap.parse_args(argv)
    a.source = a.source or default_ddtp_dir()
    if a.fetch:
        fetch_with_apt(a.source, ["en", *a.langs])
    for lp, counts in build(a.source, a.out, a.langs).items():
        print(lp, " ".join(f"{k}={v}" for k, v in counts.items()))
