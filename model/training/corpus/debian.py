"""Debian packages as data: a committed manifest (package, version, sha256), download with
``apt-get download`` into a cache, and extraction of the members a source reads with ``dpkg-deb``.

The first build of a pair selects packages from the archive's ``Contents`` index (every package
shipping a message catalog or GNOME help in the pair's other language) and records the exact
versions and digests in the pair's manifest; every later build fetches exactly those files
(``package=version``) and refuses a digest that differs.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import subprocess
import tarfile
import urllib.request
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rendition.model.training.data import REPO_DATA

MANIFEST = REPO_DATA / "corpus" / "manifest.tsv"  # en-fr's; other pairs: ``manifest_path``
MIRROR = "http://deb.debian.org/debian/dists/bookworm/main"
# members read by the sources: message catalogs (fr, de), GNOME help (C = English, fr, de), dictd files
MEMBER_PATTERNS = (
    re.compile(r"/(fr|fr_FR|de|de_DE)/LC_MESSAGES/[^/]+\.mo$"),
    re.compile(r"^\./usr/share/help/(C|fr|de)/.+\.page$"),
    re.compile(r"^\./usr/share/dictd/.+\.(index|dict\.dz)$"),
    re.compile(r"^\./usr/share/wordnet/(index|data)\.noun$"),
    re.compile(r"^\./usr/share/unicode/cldr/common/(annotations|main)/(en|fr|de)\.xml$"),
    re.compile(r"^\./usr/share/apertium/apertium-[a-z-]+/(eng-spa|es-fr|eng-cat|cat-fra|en-eo|fr-eo)\.autobil\.bin$"),
)
# extra packages named by hand, per language: the dictionaries; for French also WordNet, CLDR and
# Apertium's bilingual dictionaries for the daily-life lexicon; for German CLDR's names
EXTRA_PACKAGES = {
    "fr": ("dict-freedict-eng-fra", "dict-freedict-fra-eng", "wordnet-base", "unicode-cldr-core",
           "apertium-eng-spa", "apertium-fr-es", "apertium-eng-cat", "apertium-fra-cat", "apertium-eo-en", "apertium-eo-fr"),
    "de": ("dict-freedict-eng-deu", "dict-freedict-deu-eng", "unicode-cldr-core"),
}


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    sha256: str
    filename: str


def manifest_path(lang: str = "fr") -> Path:
    """The committed manifest of the English-<lang> corpus: en-fr's is ``manifest.tsv``."""
    return MANIFEST if lang == "fr" else MANIFEST.with_name(f"manifest.en-{lang}.tsv")


def read_manifest(path: Path = MANIFEST) -> list[Package]:
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    return [Package(*r) for r in rows]


def write_manifest(pkgs: Iterable[Package], path: Path = MANIFEST, made_by: str = "rendition data --corpus") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# package\tversion\tsha256\tfile (Debian bookworm main; rebuilt by `{made_by}`)"]
    lines += ["\t".join((p.name, p.version, p.sha256, p.filename)) for p in sorted(pkgs, key=lambda p: p.name)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def select_from_contents(cache: Path, lang: str = "fr") -> list[str]:
    """Names of the packages shipping a .mo catalog or GNOME help in ``lang``, from Contents-*.gz."""
    wanted: set[str] = set(EXTRA_PACKAGES[lang])
    catalog = re.compile(rf"/{lang}(_{lang.upper()})?/LC_MESSAGES/[^ ]+\.mo\s|^usr/share/help/{lang}/")
    for name in ("Contents-all.gz", "Contents-amd64.gz"):
        path = cache / name
        if not path.exists():
            cache.mkdir(parents=True, exist_ok=True)
            urllib.request.urlretrieve(f"{MIRROR}/{name}", path)
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            for line in f:
                if catalog.search(line):
                    for loc in line.rsplit(None, 1)[1].split(","):
                        wanted.add(loc.rsplit("/", 1)[-1])
    return sorted(wanted)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _deb_fields(deb: Path) -> tuple[str, str]:
    out = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Version"], check=True, capture_output=True, text=True).stdout
    fields = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    return fields["Package"], fields["Version"]


def _apt_download(specs: list[str], dest: Path) -> list[str]:
    """Download ``specs`` (``name=version`` or ``name``) into ``dest``; returns the ones the archive
    no longer has (``apt-get download`` refuses a whole group for one, so a refused group is
    retried one by one)."""
    gone = []
    for i in range(0, len(specs), 50):
        group = specs[i : i + 50]
        if subprocess.run(["apt-get", "download", "-q", *group], cwd=dest, capture_output=True).returncode:
            for spec in group:
                if subprocess.run(["apt-get", "download", "-q", spec], cwd=dest, capture_output=True).returncode:
                    gone.append(spec)
    return gone


class StalePins(RuntimeError):
    """Pinned versions that the archive no longer serves (a point release replaced them)."""


def _download_all(specs: list[str], dest: Path) -> list[str]:
    """``_apt_download`` in four parallel parts; the specs the archive no longer has."""
    with ThreadPoolExecutor(4) as ex:
        return [g for gone in ex.map(lambda c: _apt_download(c, dest), [specs[i::4] for i in range(4) if specs[i::4]]) for g in gone]


def fetch(cache: Path, manifest: Path = MANIFEST, lang: str = "fr", refresh_pins: bool = False) -> list[tuple[Package, Path]]:
    """Download (or find in ``cache/debs``) every package of the manifest, verified by sha256.

    A pinned version the archive no longer serves (bookworm's point releases and security updates
    replace a package's version) is an error naming them (``StalePins``); with ``refresh_pins``
    the archive's current version of each is taken instead and its pin rewritten in the manifest.
    Without a manifest, the packages shipping ``lang`` are selected from the archive's Contents
    index and the manifest is written from what was downloaded."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    if manifest.exists():
        pkgs = read_manifest(manifest)
        missing = [p for p in pkgs if not (debs / p.filename).exists()]
        gone = set(_download_all([f"{p.name}={p.version}" for p in missing], debs)) if missing else set()
        if gone and not refresh_pins:
            raise StalePins(
                f"the archive no longer has {len(gone)} pinned version(s) of {manifest.name}: {', '.join(sorted(gone))}; "
                "`rendition data --corpus --refresh-pins` takes their current versions and rewrites their pins"
            )
        if gone:
            names = sorted(g.split("=", 1)[0] for g in gone)
            if still := _download_all(names, debs):
                raise StalePins(f"the archive has no version of {', '.join(still)}")
            fresh = {}
            for deb in debs.glob("*.deb"):
                if deb.name.split("_", 1)[0] in names:
                    name, version = _deb_fields(deb)
                    fresh[name] = Package(name, version, sha256(deb), deb.name)
            pkgs = [fresh.get(p.name, p) if f"{p.name}={p.version}" in gone else p for p in pkgs]
            header = manifest.read_text(encoding="utf-8").splitlines()[0]
            write_manifest(pkgs, manifest, header.split("rebuilt by `", 1)[1].split("`", 1)[0])
        out = []
        for p in pkgs:
            got = sha256(debs / p.filename)
            if got != p.sha256:
                raise RuntimeError(f"{p.filename}: sha256 {got} differs from the manifest's {p.sha256}")
            out.append((p, debs / p.filename))
        return out
    names = select_from_contents(cache, lang)
    have = {f.name.split("_", 1)[0] for f in debs.glob("*.deb")}
    if absent := _download_all([n for n in names if n not in have], debs):
        raise StalePins(f"the archive has no version of {', '.join(absent)}")
    out = []
    for deb in sorted(debs.glob("*.deb")):
        name, version = _deb_fields(deb)
        if name in names:
            out.append((Package(name, version, sha256(deb), deb.name), deb))
    made_by = "rendition data --corpus" + ("" if lang == "fr" else f" --pair en-{lang}")
    write_manifest([p for p, _ in out], manifest, made_by)
    return out


def members(deb: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of the members of a .deb that a corpus source reads."""
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
        for info in tar:
            if info.isfile() and any(p.search(info.name) for p in MEMBER_PATTERNS):
                f = tar.extractfile(info)
                if f is not None:
                    yield info.name, f.read()
    proc.wait()


def extract(deb: Path, dest: Path) -> Path:
    """Unpack the members a source reads into ``dest/<package>/`` (cached: done once per file)."""
    out = dest / deb.name.split("_", 1)[0]
    done = out / ".done"
    if done.exists():
        return out
    for name, data in members(deb):
        path = out / name.lstrip("./")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    out.mkdir(parents=True, exist_ok=True)
    done.touch()
    return out
