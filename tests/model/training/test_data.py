"""DDTP parsing, alignment and the held-out split."""

from __future__ import annotations

import lzma

from rendition.model.training.data import (
    SPLITS_DIR,
    Pair,
    align,
    build,
    keep,
    normalise,
    parse_ddtp,
    read_tsv,
    split_pairs,
)

EN = """Package: foo
Description-md5: 0123
Description-en: Tool to frobnicate files
 Foo frobnicates files quickly. It is written in C.
 .
 Features:
  * fast
  * small
 .
 This package contains the binaries.

Package: bar
Description-md5: 4567
Description-en: Bar library
 Bar does things.
"""

FR = """Package: foo
Description-md5: 0123
Description-fr: outil pour frobniquer des fichiers
 Foo frobnique les fichiers rapidement. Il est écrit en C.
 .
 Fonctionnalités :
  * rapide
  * petit
 .
 Ce paquet contient les binaires.
"""


def test_parse_and_align_by_summary_paragraph_and_sentence() -> None:
    en = dict(parse_ddtp(EN.splitlines(True)))
    fr = dict(parse_ddtp(FR.splitlines(True)))
    assert set(en) == {"0123", "4567"} and set(fr) == {"0123"}
    pairs = align(en["0123"], fr["0123"])
    assert pairs[0] == Pair("Tool to frobnicate files", "outil pour frobniquer des fichiers")
    assert Pair("Foo frobnicates files quickly.", "Foo frobnique les fichiers rapidement.") in pairs
    assert Pair("It is written in C.", "Il est écrit en C.") in pairs
    assert Pair("fast", "rapide") in pairs and Pair("small", "petit") in pairs
    assert Pair("Features:", "Fonctionnalités :") in pairs
    assert pairs[-1] == Pair("This package contains the binaries.", "Ce paquet contient les binaires.")


def test_mismatched_paragraph_counts_keep_only_the_summary() -> None:
    en = "Summary\n One.\n .\n Two."
    fr = "Résumé\n Un. Deux."
    assert align(en, fr) == [Pair("Summary", "Résumé")]


def test_cleaning_rules() -> None:
    assert keep(Pair("A reasonable sentence here.", "Une phrase raisonnable ici."))
    assert not keep(Pair("A long sentence that was not translated at all.", "A long sentence that was not translated at all."))
    assert not keep(Pair("Short.", "Une traduction beaucoup, beaucoup trop longue pour être vraie."))
    assert not keep(Pair("", "vide"))


def test_split_is_disjoint_by_normalised_source() -> None:
    pairs = [Pair(f"Sentence number {i % 700}.", f"Phrase numéro {i}.") for i in range(2000)]
    pairs += [Pair(f"SENTENCE   number {i}.", f"Autre {i}.") for i in range(300)]  # case/space variants
    s = split_pairs(pairs)
    train_src = {normalise(p.src) for p in s["train"]}
    for name in ("valid", "test"):
        held = [normalise(p.src) for p in s[name]]
        assert len(held) == len(set(held))  # one pair per source
        assert not train_src & set(held)
    assert split_pairs(pairs) == s  # deterministic


def test_committed_splits_have_no_leak_and_expected_size() -> None:
    for lang in ("fr", "de"):
        test = read_tsv(SPLITS_DIR / f"test.en-{lang}.tsv")
        valid = read_tsv(SPLITS_DIR / f"valid.en-{lang}.tsv")
        assert 900 <= len(test) <= 2000 and 900 <= len(valid) <= 2000
        assert not {normalise(p.src) for p in test} & {normalise(p.src) for p in valid}


def test_build_from_xz_files(tmp_path) -> None:
    src = tmp_path / "ddtp"
    src.mkdir()
    for lang, text in (("en", EN), ("fr", FR), ("de", "")):
        (src / f"Translation-{lang}.xz").write_bytes(lzma.compress(text.encode()))
    counts = build(src, tmp_path / "out", ["fr"])
    total = sum(counts["en-fr"].values())
    assert total == 7  # summary, 2 sentences, "Features:" + 2 items, last paragraph
    lines = sum(len(read_tsv(tmp_path / "out" / f"{s}.en-fr.tsv")) for s in ("train", "valid", "test"))
    assert lines == total
