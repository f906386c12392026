"""The broad corpus for each pair (``rendition data --corpus --pair en-fr|en-de``): the sources with a
side in the other language read by language, on catalogs, pages, dictionaries, CLDR files and
archive indexes written here with the formats' own tools."""

from __future__ import annotations

import gzip
import lzma
from pathlib import Path

import polib
import pytest
from test_corpus import _b64, write_help
from test_daily import _dictd  # (this directory is on sys.path)

from rendition.model.training.corpus import build, cldr, debian, freedict, mallard, verbatim
from rendition.model.training.data import normalise

CATALOG = {
    "fr": [("_Open File", "_Ouvrir le fichier"), ("Save the document before closing?", "Enregistrer le document avant de fermer ?")],
    "de": [("_Open File", "Datei ö_ffnen"), ("Save the document before closing?", "Das Dokument vor dem Schließen speichern?")],
}
DIALOGUE = {"fr": ("We must cross the river before dawn.", "Nous devons traverser la rivière avant l'aube."),
            "de": ("We must cross the river before dawn.", "Wir müssen den Fluss vor der Morgendämmerung überqueren.")}  # fmt: skip


def _mo(path: Path, entries: list[tuple[str, str]]) -> None:
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for msgid, msgstr in entries:
        po.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save_as_mofile(str(path))


@pytest.mark.parametrize("lang", ["fr", "de"])
def test_catalogs_are_read_in_the_pairs_language(tmp_path: Path, lang: str) -> None:
    pkg = tmp_path / "pkg"
    for xx in ("fr", "de"):
        _mo(pkg / f"usr/share/locale/{xx}/LC_MESSAGES/app.mo", CATALOG[xx])
        _mo(pkg / f"usr/share/locale/{xx}/LC_MESSAGES/wesnoth-httt.mo", [DIALOGUE[xx]])
    rows = build._catalog_rows(pkg, lang)
    other = "de" if lang == "fr" else "fr"
    assert ("ui", "Open File", CATALOG[lang][0][1].replace("_", "")) in rows
    assert ("dialogue", *DIALOGUE[lang]) in rows
    assert len(rows) == 3 and not [r for r in rows if r[2] in {x for _, x in CATALOG[other] + [DIALOGUE[other]]}]


def test_german_help_pages_align_like_french_ones(tmp_path: Path) -> None:
    de = dict(lang="de", desc="Mit dem Internet verbinden.", title="Drahtlose Netzwerke", p1="Sie können sich mit einem Netzwerk verbinden. Es ist einfach.",
              p2="Öffnen Sie", a="Einstellungen", b="Netzwerk")  # fmt: skip
    write_help(tmp_path, de)
    rows = list(mallard.read_help(tmp_path, "de"))
    assert ("doc", "Wireless networks", "Drahtlose Netzwerke") in rows
    assert ("doc", "It is easy.", "Es ist einfach.") in rows
    assert ("doc", "Open Settings ▸ Network.", "Öffnen Sie Einstellungen ▸ Netzwerk.") in rows
    assert list(mallard.read_help(tmp_path, "fr")) == []


@pytest.mark.parametrize(
    ("lang", "name", "english", "word", "gloss"),
    [("fr", "fra-eng", "William", "Guillaume", "pierre"), ("de", "deu-eng", "William", "Wilhelm", "Stein")],
)
def test_dictionary_rows_leave_out_first_names_in_each_pair(tmp_path: Path, lang: str, name: str, english: str, word: str, gloss: str) -> None:
    d = tmp_path / "usr/share/dictd"
    d.mkdir(parents=True)
    _dictd(d, name, {word: [english], gloss: ["stone"]})
    assert list(build.dictionary_rows(tmp_path, lang)) == [("dict", "stone", gloss)]


def test_german_first_names_are_told_from_words() -> None:
    assert verbatim.maps_name("John", "Johann", "de") and verbatim.maps_name("Charles", "Karl", "de") and verbatim.maps_name("Lewis", "Ludwig", "de")
    assert not verbatim.maps_name("Peter", "Peter", "de") and not verbatim.maps_name("stone", "Stein", "de")
    assert not verbatim.maps_name("Lewis", "Ludwig")  # en-fr's rule is as it was: German names are not in its list


def _cldr_files(root: Path) -> None:
    main, ann = root / "usr/share/unicode/cldr/common/main", root / "usr/share/unicode/cldr/common/annotations"
    main.mkdir(parents=True)
    ann.mkdir(parents=True)
    values = {
        "en": (["English", "German"], ["Germany", "Austria"], "Sunday", "March", "grinning face", "Congo (Republic)"),
        "de": (["Englisch", "Deutsch"], ["Deutschland", "Österreich"], "Sonntag", "März", "grinsendes Gesicht", "Kongo (Republik)"),
    }
    for lang, (langs, lands, day, month, emoji, alt) in values.items():
        (main / f"{lang}.xml").write_text(
            "<ldml><localeDisplayNames><languages>"
            + "".join(f'<language type="{c}">{n}</language>' for c, n in zip(("en", "de"), langs))
            + '<language type="nl">Nederlands</language>' * (lang == "de")
            + "</languages><territories>"
            + "".join(f'<territory type="{c}">{n}</territory>' for c, n in zip(("DE", "AT"), lands))
            + f'<territory type="CG" alt="variant">{alt}</territory>'
            + '</territories></localeDisplayNames><calendar type="gregorian"><months><monthWidth type="wide">'
            + f'<month type="3">{month}</month></monthWidth></months><days><dayWidth type="wide"><day type="sun">{day}</day>'
            + "</dayWidth></days></calendar></ldml>",
            encoding="utf-8",
        )
        (ann / f"{lang}.xml").write_text(f'<annotation cp="😀">a | b</annotation>\n<annotation cp="😀" type="tts">{emoji}</annotation>\n', encoding="utf-8")


def test_cldr_names_pair_by_code(tmp_path: Path) -> None:
    _cldr_files(tmp_path / "unicode-cldr-core")
    assert sorted(cldr.name_pairs(tmp_path, "de")) == sorted(
        [("English", "Englisch"), ("German", "Deutsch"), ("Germany", "Deutschland"), ("Austria", "Österreich"),
         ("Sunday", "Sonntag"), ("March", "März"), ("grinning face", "grinsendes Gesicht")]
    )  # fmt: skip
    with pytest.raises(FileNotFoundError, match="unicode-cldr-core"):
        list(cldr.name_pairs(tmp_path, "fr"))


def _contents(cache: Path) -> None:
    lines = {
        "Contents-all.gz": ["usr/share/locale/de/LC_MESSAGES/gedit.mo    gnome/gedit-common", "usr/share/help/fr/gedit/index.page  gnome/gedit-common"],
        "Contents-amd64.gz": ["usr/share/locale/fr/LC_MESSAGES/vlc.mo    video/vlc-l10n", "usr/share/help/de/eog/index.page  gnome/eog,gnome/eog-doc",
                              "usr/share/locale/de_DE/LC_MESSAGES/kde.mo    kde/kde-l10n-de", "usr/share/locale/de_AT/LC_MESSAGES/x.mo    misc/x-at"],
    }  # fmt: skip
    for name, rows in lines.items():
        with gzip.open(cache / name, "wt", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")


@pytest.mark.parametrize(
    ("lang", "expected"),
    [("fr", {"gedit-common", "vlc-l10n"}), ("de", {"gedit-common", "eog", "eog-doc", "kde-l10n-de"})],
)
def test_packages_are_selected_by_the_pairs_language(tmp_path: Path, lang: str, expected: set[str]) -> None:
    _contents(tmp_path)  # (present: nothing is downloaded)
    assert set(debian.select_from_contents(tmp_path, lang)) == expected | set(debian.EXTRA_PACKAGES[lang])
    assert debian.manifest_path("fr") == debian.MANIFEST and debian.manifest_path(lang).name == ("manifest.tsv" if lang == "fr" else "manifest.en-de.tsv")


def _ddtp(folder: Path, lang: str, descriptions: dict[str, tuple[str, str]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for code, i in (("en", 0), (lang, 1)):
        text = "".join(f"Package: p{n}\nDescription-md5: {md5}\nDescription-{code}: {d[i]}\n\n" for n, (md5, d) in enumerate(descriptions.items()))
        (folder / f"Translation-{code}.xz").write_bytes(lzma.compress(text.encode()))


def test_the_german_build_reads_only_sources_with_a_german_side(tmp_path: Path) -> None:
    pkg = tmp_path / "extract" / "app"
    _mo(pkg / "usr/share/locale/de/LC_MESSAGES/app.mo", CATALOG["de"])
    _mo(pkg / "usr/share/locale/fr/LC_MESSAGES/app.mo", CATALOG["fr"])
    _cldr_files(tmp_path / "extract" / "unicode-cldr-core")
    _ddtp(tmp_path / "ddtp", "de", {"a" * 32: ("text editor", "Texteditor")})
    rows = list(build.raw_rows([pkg], tmp_path / "ddtp", workers=1, lang="de"))
    assert {r[0] for r in rows} == {"ui", "ddtp", "cldr"}
    assert ("ddtp", "text editor", "Texteditor") in rows and ("cldr", "Germany", "Deutschland") in rows
    assert ("ui", "Save the document before closing?", "Das Dokument vor dem Schließen speichern?") in rows
    assert {r[0] for r in rows} <= set(build.PAIR_SOURCES["en-de"])


def test_the_german_split_keeps_to_its_own_committed_splits(tmp_path: Path) -> None:
    (tmp_path / "test.en-de.tsv").write_text("Open the file number 7.\tDatei Nummer 7 öffnen.\n", encoding="utf-8")
    (tmp_path / "test.en-fr.tsv").write_text("Open the file number 8.\tOuvrir le fichier numéro 8.\n", encoding="utf-8")
    rows = [("ui", f"Open the file number {i}.", f"Datei Nummer {i} öffnen.") for i in range(3000)]
    rows += [("cldr", "Germany", "Deutschland")]
    splits, _ = build.split(rows, tmp_path, "en-de")
    train = {normalise(e) for _, e, _ in splits["train"]}
    assert "open the file number 7." not in train and "open the file number 8." in train  # en-fr's splits do not hold German back
    assert ("cldr", "Germany", "Deutschland") in splits["train"]  # never held out
    assert splits["test.ui"] and splits["valid.ui"]
    written = build.write_splits({k: v for k, v in splits.items() if k != "train"}, tmp_path, pair="en-de")
    assert tmp_path / "test.ui.en-de.tsv" in written and not (tmp_path / "test.ui.en-fr.tsv").exists()


def test_an_unknown_pair_is_refused() -> None:
    assert build.pair_language("en-de") == "de" and build.pair_language("en-fr") == "fr"
    with pytest.raises(ValueError, match="en-es"):
        build.pair_language("en-es")


def test_the_committed_german_manifest_pins_every_package() -> None:
    pkgs = debian.read_manifest(debian.manifest_path("de"))
    assert len(pkgs) > 1000 and len({p.name for p in pkgs}) == len(pkgs)
    assert all(len(p.sha256) == 64 and p.filename.endswith(".deb") for p in pkgs)
    assert {"dict-freedict-eng-deu", "dict-freedict-deu-eng", "unicode-cldr-core", "gnome-user-docs"} <= {p.name for p in pkgs}


def test_ding_cross_references_notes_and_examples_are_not_senses(tmp_path: Path) -> None:
    """The German dictionaries (Ding's) add lines that are not translations to an entry."""
    text = (
        "check-in hall /tʃˈɛk ɪn hˈɔːl/\nAbfertigungshalle <fem>, Abfertigungsbereich <masc> [aviat.]\n"
        "         Note: im Flughafengebäude\n"
        '      "check-in halls"  - Abfertigungshallen, Abfertigungsbereiche\n'
        "   Synonym: {check-in area}\n\n see: {check-in counter}\n"
    ).encode()
    d = tmp_path / "usr/share/dictd"
    d.mkdir(parents=True)
    (d / "freedict-eng-deu.index").write_text(f"check-in hall\tA\t{_b64(len(text))}\n", encoding="utf-8")
    (d / "freedict-eng-deu.dict.dz").write_bytes(gzip.compress(text))
    assert list(freedict.read_dictionaries(tmp_path, "de")) == [("check-in hall", "Abfertigungshalle"), ("check-in hall", "Abfertigungsbereich")]
