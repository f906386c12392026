"""The broad corpus's sources and cleaning (rendition.model.training.corpus): real catalogs, pages and
dictionaries written with the formats' own tools, read back through the pipeline."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

import polib
import pytest

from rendition.model.training.corpus import build, clean, debian, freedict, gettext_source, mallard, phrases
from rendition.model.training.data import normalise


@pytest.mark.parametrize(
    ("src", "tgt", "expected"),
    [
        ("Copy %s to %s", "Copier %s vers %s", ("Copy X to Y", "Copier X vers Y")),
        ("%d files selected", "%d fichiers sélectionnés", ("3 files selected", "3 fichiers sélectionnés")),
        ("Delete %(name)s?", "Supprimer %(name)s ?", ("Delete X?", "Supprimer X ?")),
        ("%2 of %1", "%1 de %2", ("X of Y", "Y de X")),  # reordered Qt placeholders keep their identity
        ("{0} items", "{0} éléments", ("X items", "X éléments")),
        ("Found %d matches in %s", "%s : %d correspondances", None),  # bare conversions reordered: a broken entry
        ("Found %d matches in %s", "%d correspondances dans %s", ("Found 3 matches in X", "3 correspondances dans X")),
        ("%d file", "%d fichiers %s", None),  # the two sides differ: dropped
        ("Plain text", "Texte simple", ("Plain text", "Texte simple")),
    ],
)
def test_placeholders_become_the_same_stand_ins(src: str, tgt: str, expected: tuple[str, str] | None) -> None:
    assert clean.fill_placeholders(src, tgt) == expected


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("_File", "en", "File"),
        ("&Open...", "en", "Open..."),
        ("Ouvrir le _fichier", "fr", "Ouvrir le fichier"),
        ("Enregistrer sous (_S)", "fr", "Enregistrer sous"),
        ("<b>Bold</b> text &amp; more", "en", "Bold text & more"),
        ("Tom & Jerry", "en", "Tom & Jerry"),
        ("Supprimer ?", "fr", "Supprimer ?"),  # French keeps its space before ? and !
    ],
)
def test_ui_strings_lose_accelerators_and_markup(text: str, lang: str, expected: str) -> None:
    assert clean.strip_ui(text, lang) == expected


def test_text_filter_and_language_check() -> None:
    assert clean.looks_like_text("Save the current document")
    assert not clean.looks_like_text("file_name")
    assert not clean.looks_like_text("org.gnome.Settings")
    assert not clean.looks_like_text("--verbose")
    assert not clean.looks_like_text("1234")
    assert clean.language("Le chat dort sur la table de la cuisine.")[0] == "fr"
    assert not clean.language_ok("Le chat dort sur la table de la cuisine.", "en")
    assert clean.language_ok("Le chat", "en")  # too short to tell: accepted


def test_mo_catalog_entries(tmp_path: Path) -> None:
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Plural-Forms": "nplurals=2; plural=(n > 1);"}
    po.append(polib.POEntry(msgid="_Open File", msgstr="_Ouvrir le fichier"))
    po.append(polib.POEntry(msgid="Untranslated", msgstr=""))
    po.append(polib.POEntry(msgid="OK", msgstr="OK"))  # identical
    po.append(polib.POEntry(msgid="Fuzzy one", msgstr="Flou", flags=["fuzzy"]))  # not compiled
    po.append(polib.POEntry(msgid="%d file deleted", msgid_plural="%d files deleted", msgstr_plural={0: "%d fichier supprimé", 1: "%d fichiers supprimés"}))
    po.append(polib.POEntry(msgid="First sentence here. Second one follows.", msgstr="Première phrase ici. La seconde suit."))
    po.append(polib.POEntry(msgid="org.gnome.Foo", msgstr="org.gnome.Foo.fr"))
    mo = tmp_path / "pkg" / "usr/share/locale/fr/LC_MESSAGES/app.mo"
    mo.parent.mkdir(parents=True)
    po.save_as_mofile(str(mo))
    assert list(gettext_source.catalogs(tmp_path / "pkg", "fr")) == [mo]
    pairs = list(gettext_source.read_catalog(mo, "fr"))
    assert ("Open File", "Ouvrir le fichier") in pairs
    assert ("3 file deleted", "3 fichier supprimé") in pairs  # the singular once
    assert ("First sentence here.", "Première phrase ici.") in pairs and ("Second one follows.", "La seconde suit.") in pairs
    assert not [p for p in pairs if p[0] in ("Untranslated", "OK", "Fuzzy one") or "gnome" in p[0]]
    assert len(pairs) == 4


PAGE = """<?xml version="1.0" encoding="utf-8"?>
<page xmlns="http://projectmallard.org/1.0/" type="topic" id="x" xml:lang="{lang}">
  <info><credit type="author"><name>Someone</name></credit><desc>{desc}</desc></info>
  <title>{title}</title>
  <p>{p1}</p>
  <steps><item><p>{p2} <guiseq><gui>{a}</gui><gui>{b}</gui></guiseq>.</p></item></steps>
  <code>ls -l</code>
</page>"""


HELP_EN = dict(lang="C", desc="Connect to the Internet.", title="Wireless networks", p1="You can connect to a network. It is easy.", p2="Open", a="Settings", b="Network")


def write_help(root: Path, translated: dict[str, str]) -> None:
    """The English page ``doc/net.page`` and its translation (``translated["lang"]``) under root."""
    for lang, fields in (("C", HELP_EN), (translated["lang"], translated)):
        page = root / f"usr/share/help/{lang}/doc/net.page"
        page.parent.mkdir(parents=True)
        page.write_text(PAGE.format(**fields), encoding="utf-8")


def test_help_pages_align_by_structure(tmp_path: Path) -> None:
    fr = dict(lang="fr", desc="Se connecter à Internet.", title="Réseaux sans fil", p1="Vous pouvez vous connecter à un réseau. C’est facile.", p2="Ouvrez", a="Paramètres", b="Réseau")
    write_help(tmp_path, fr)
    rows = list(mallard.read_help(tmp_path, "fr"))
    assert ("doc", "Wireless networks", "Réseaux sans fil") in rows
    assert ("doc", "It is easy.", "C’est facile.") in rows  # split by sentence: same count on both sides
    assert ("doc", "Open Settings ▸ Network.", "Ouvrez Paramètres ▸ Réseau.") in rows
    assert not [r for r in rows if "ls -l" in r[1] or "Someone" in r[1]]
    # a translation whose structure differs is not aligned
    (tmp_path / "usr/share/help/fr/doc/net.page").write_text(PAGE.format(**fr).replace("<code>ls -l</code>", "<p>En plus.</p>"), encoding="utf-8")
    assert list(mallard.read_help(tmp_path, "fr")) == []


def _b64(n: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = ""
    while True:
        out = alphabet[n % 64] + out
        n //= 64
        if not n:
            return out


def test_dictd_dictionaries(tmp_path: Path) -> None:
    entries = [("cat", "cat /kæt/\nchat, matou\n"), ("run", "run /rʌn/\n1. courir\n2. fonctionner (machine)\n")]
    body, index = b"", []
    for word, text in entries:
        data = text.encode()
        index.append(f"{word}\t{_b64(len(body))}\t{_b64(len(data))}")
        body += data
    d = tmp_path / "usr/share/dictd"
    d.mkdir(parents=True)
    (d / "freedict-eng-fra.index").write_text("\n".join(["00databaseinfo\tA\tB", *index]) + "\n", encoding="utf-8")
    (d / "freedict-eng-fra.dict.dz").write_bytes(gzip.compress(body))
    assert base64  # the index's numbers are base64 digits, checked against our own encoder above
    assert sorted(freedict.read_dictionaries(tmp_path, "fr")) == [("cat", "chat"), ("cat", "matou"), ("run", "courir"), ("run", "fonctionner")]


def test_manifest_round_trip(tmp_path: Path) -> None:
    pkgs = [debian.Package("b", "1.0", "ab" * 32, "b_1.0_all.deb"), debian.Package("a", "2:3-1", "cd" * 32, "a_3-1_amd64.deb")]
    path = tmp_path / "manifest.tsv"
    debian.write_manifest(pkgs, path)
    assert debian.read_manifest(path) == sorted(pkgs, key=lambda p: p.name)


def test_the_committed_manifest_pins_every_package() -> None:
    pkgs = debian.read_manifest()
    assert len(pkgs) > 1000 and len({p.name for p in pkgs}) == len(pkgs)
    assert all(len(p.sha256) == 64 and p.filename.endswith(".deb") for p in pkgs)
    assert {"wesnoth-1.16-httt", "dict-freedict-eng-fra", "gnome-user-docs"} <= {p.name for p in pkgs}


# An archive as `apt-get download` sees it, on PATH: it serves the versions listed in $ARCHIVE
# ("name version" lines, the first of a name its current one) as real .deb files built by dpkg-deb,
# and like apt refuses a whole command, downloading nothing, when one spec names a version it lacks.
FAKE_APT = r"""#!/usr/bin/env bash
set -e
shift 2  # download -q
for spec in "$@"; do
    name=${spec%%=*}; want=${spec#*=}; [ "$want" = "$spec" ] && want=$(awk -v n="$name" '$1==n {print $2; exit}' "$ARCHIVE")
    grep -qx "$name $want" "$ARCHIVE" || { echo "E: Version '$want' for '$name' was not found" >&2; exit 100; }
done
for spec in "$@"; do
    name=${spec%%=*}; want=${spec#*=}; [ "$want" = "$spec" ] && want=$(awk -v n="$name" '$1==n {print $2; exit}' "$ARCHIVE")
    d=$(mktemp -d); mkdir "$d/DEBIAN"
    printf 'Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n' "$name" "$want" > "$d/DEBIAN/control"
    SOURCE_DATE_EPOCH=1 dpkg-deb -Zgzip --build "$d" "${name}_${want}_all.deb" >/dev/null; rm -r "$d"  # (the same bytes each time: no clock in them)
done
"""


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "apt-get").write_text(FAKE_APT)
    (bin_dir / "apt-get").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("ARCHIVE", str(tmp_path / "archive.txt"))
    return tmp_path / "archive.txt"


def _pin(cache: Path, name: str, version: str) -> debian.Package:
    """The manifest row of the file the fake archive serves for name=version (downloaded once to learn its digest)."""
    where = cache / "pins"
    where.mkdir(parents=True, exist_ok=True)
    assert not debian._apt_download([f"{name}={version}"], where)
    deb = where / f"{name}_{version}_all.deb"
    return debian.Package(name, version, debian.sha256(deb), deb.name)


def test_a_pinned_version_the_archive_dropped_is_named_and_refreshed_on_request(tmp_path: Path, archive: Path) -> None:
    archive.write_text("kept 1.0\nmoved 2.0-1\nmoved 2.0-2\n")
    pins = [_pin(tmp_path, "kept", "1.0"), _pin(tmp_path, "moved", "2.0-1")]
    manifest = tmp_path / "manifest.tsv"
    debian.write_manifest(pins, manifest, "rendition data --corpus")
    archive.write_text("kept 1.0\nmoved 2.0-2\n")  # a point release replaced moved 2.0-1
    with pytest.raises(debian.StalePins, match=r"moved=2\.0-1.*--refresh-pins"):
        debian.fetch(tmp_path / "cache", manifest)
    assert debian.read_manifest(manifest) == pins  # (nothing rewritten without asking)

    got = debian.fetch(tmp_path / "cache", manifest, refresh_pins=True)
    assert [(p.name, p.version, path.name) for p, path in got] == [("kept", "1.0", "kept_1.0_all.deb"), ("moved", "2.0-2", "moved_2.0-2_all.deb")]
    assert all(debian.sha256(path) == p.sha256 for p, path in got)
    assert debian.read_manifest(manifest) == [p for p, _ in got]  # the new pin, with its digest
    assert manifest.read_text().startswith("# package\tversion\tsha256\tfile (Debian bookworm main; rebuilt by `rendition data --corpus`)")
    assert debian.fetch(tmp_path / "cache", manifest) == got  # and the next build takes it as pinned


def test_split_keeps_held_out_text_out_of_training(tmp_path: Path) -> None:
    (tmp_path / "valid.en-fr.tsv").write_text("DDTP valid source\tSource DDTP\n", encoding="utf-8")
    (tmp_path / "test.en-fr.tsv").write_text("", encoding="utf-8")
    # an earlier build's committed split holds a pair this build would train on: it stays out
    (tmp_path / "test.help.en-fr.tsv").write_text("Open the file number 7.\tOuvrir le fichier numéro 7.\n", encoding="utf-8")
    rows = [("ui", f"Open the file number {i}.", f"Ouvrir le fichier numéro {i}.") for i in range(3000)]
    rows += [("dialogue", f"We must hurry to the river {i}!", f"Nous devons nous hâter vers la rivière {i} !") for i in range(500)]
    rows += [("ui", "ddtp valid source", "autre chose"), ("ddtp", "A package description.", "Une description de paquet.")]
    rows += [("lexicon>fr", "the infant", "l'enfant"), ("realised>en", "The bike is red.", "La bicyclette est rouge.")]  # one-way rows
    # the same English as a held-out dialogue line, in another source: must leave training
    held = next(r for r in rows if r[0] == "dialogue" and build._bucket(r[1]) < build.HELD_OUT["dialogue"])
    rows.append(("ui", held[1], "Une autre traduction."))
    splits, counts = build.split(rows, tmp_path)
    held_en = {normalise(e) for name, rs in splits.items() if name != "train" for _, e, _ in rs}
    held_fr = {normalise(x) for name, rs in splits.items() if name != "train" for _, _, x in rs}
    train = splits["train"]
    assert not [r for r in train if normalise(r[1]) in held_en or normalise(r[2]) in held_fr]
    assert not [r for r in train if normalise(r[1]) in ("ddtp valid source", "open the file number 7.")]
    assert ("ddtp", "A package description.", "Une description de paquet.") in train
    assert ("lexicon>fr", "the infant", "l'enfant") in train and ("realised>en", "The bike is red.", "La bicyclette est rouge.") in train
    assert splits["test.dialogue"] and splits["valid.dialogue"] and splits["test.ui"]
    everyday = splits["test.everyday"]
    assert everyday and all(r in splits["test.dialogue"] or r in splits["test.ui"] for r in everyday)
    assert counts["dialogue", "train"] + len(splits["test.dialogue"]) + len(splits["valid.dialogue"]) <= 500
    # the committed held-out sets stay as they are unless asked
    held_out = {k: v for k, v in splits.items() if k != "train"}
    assert build.write_splits(held_out, tmp_path) and (tmp_path / "test.dialogue.en-fr.tsv").exists()
    assert (tmp_path / "test.help.en-fr.tsv").read_text(encoding="utf-8").startswith("Open the file number 7.")
    assert build.write_splits(held_out, tmp_path) == []
    assert tmp_path / "test.dialogue.en-fr.tsv" in build.write_splits(held_out, tmp_path, rewrite=True)


@pytest.mark.parametrize(
    "english, key",
    [
        ("How are you?", "how are you"),
        ("Hello, how are you, Ethel?", "how are you"),
        ("Hi Jill, how are you doing?", "how are you doing"),
        ("Thank you, my friend!", "thank you"),
        ("I’m sorry.", "i'm sorry"),
        ("Hello!", "hello"),
        ("How are you my boy, how are you.", "how are you my boy how are you"),
        ("Are you tired?", "are you tired"),
    ],
)
def test_set_phrase_keys(english: str, key: str) -> None:
    assert phrases.key(english) == key


def test_set_phrases_get_their_own_source() -> None:
    """Catalog pairs whose English is a set phrase are relabelled; FreeDict's only when the English
    is a sentence ("how are you?", not the gloss "take care"); other rows keep their source."""
    rows = [
        ("dialogue", "How are you?", "Comment allez-vous ?"),
        ("ui", "Thank you, Tallin.", "Merci, Tallin."),
        ("dict", "how are you?", "comment allez-vous?"),
        ("dict", "take care", "avoir soin de"),
        ("realised", "Are you tired?", "Êtes-vous fatigué ?"),
        ("ui", "How are you reaching me?", "Comment fais-tu pour me parler ?"),
    ]
    assert [s for s, _, _ in phrases.mark(rows)] == ["phrases", "phrases", "phrases", "dict", "realised", "ui"]


def test_cap_keeps_a_seeded_share_of_a_source_and_the_rest_whole() -> None:
    from rendition.model.training.corpus.rows import cap_sources
    from rendition.model.training.data import parse_cap

    rows = [("dict", f"word{i}", f"Wort{i}") for i in range(10)] + [("ui", "Open", "Öffnen"), ("dict>en", "cat", "Katze")]
    rows.insert(3, ("ddtp", "A tool.", "Ein Werkzeug."))
    capped = cap_sources(rows, parse_cap("dict=4"), seed=1)
    assert sum(r[0].startswith("dict") for r in capped) == 4  # dict>en is a dict row too
    assert [r for r in capped if not r[0].startswith("dict")] == [rows[3], ("ui", "Open", "Öffnen")]
    assert capped == [r for r in rows if r in capped]  # the corpus's order
    assert cap_sources(rows, {"dict": 4}, seed=1) == capped  # the same choice for the same seed
    assert {cap_sources(rows, {"dict": 4}, seed=s)[0] for s in range(8)} != {capped[0]}  # another for other seeds
    assert cap_sources(rows, {"dict": 0}) == [rows[3], ("ui", "Open", "Öffnen")]
    assert cap_sources(rows, {"dict": 100}) == rows and cap_sources(rows, {}) == rows
    for bad in ("dict", "dict=-1", "dict=x"):
        with pytest.raises(ValueError, match="cap: expected name=N with N >= 0"):
            parse_cap(bad)
