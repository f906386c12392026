"""``rendition translate-file`` (``python -m rendition.model.cli translate-file``) with the shipped translator:
a real .docx and the real Debian catalog, checked against the same model called directly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import polib
import pytest

from rendition.model.text.placeholders import placeholders
from rendition.model.translation.translator import Translator
from tests.model.documents.helpers import make_docx, msgfmt_check, read_docx, zip_bomb

ROOT = Path(__file__).resolve().parents[3]
REAL_PO = Path(__file__).parent / "data" / "pg_test_timing-15.fr.po"
S1 = "This package contains the development files of the library."
S2 = "The documentation is in a separate package."


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "rendition.model.cli", "translate-file", *args], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


def test_docx_and_catalog(tmp_path, shipped):
    src = tmp_path / "guide.docx"
    src.write_bytes(make_docx([[("This package contains ", False), ("the development files", True),
                                (" of the library.", False)], [(S2, False)]]))  # fmt: skip
    out = tmp_path / "guide.fr.docx"
    run = cli(str(src), str(out), "--source", "en", "--target", "fr", "--beam-size", "2", "--workers", "1", "--threads", "1", "-q")
    assert run.returncode == 0, run.stderr
    expected = [t.text for t in shipped.translate([S1, S2], "en", "fr", beam_size=2, max_length=256)]
    paragraphs = read_docx(out.read_bytes())
    assert ["".join(t for t, _ in p) for p in paragraphs] == expected
    assert [b for _, b in paragraphs[0]] == [False, True, False]

    po = polib.pofile(str(REAL_PO))
    for e in po:
        e.msgstr = ""
        if e.msgid_plural:
            e.msgstr_plural = {0: "", 1: ""}
    pot = tmp_path / "pg_test_timing.pot"
    pot.write_text(str(po))
    fr = tmp_path / "fr.po"
    run = cli(str(pot), str(fr), "--source", "auto", "--target", "fr", "--beam-size", "2", "--workers", "1", "--threads", "1")
    assert run.returncode == 0, run.stderr
    assert "14 texts" in run.stderr  # (13 entries, one of them plural)
    check = msgfmt_check(fr)
    assert check.returncode == 0, check.stderr
    result = polib.pofile(str(fr))
    done = [e for e in result if e.msgid and e.msgstr]
    assert len(done) >= 9 and all("fuzzy" in e.flags and placeholders(e.msgstr) == placeholders(e.msgid) for e in done)
    line = "Detected clock going backwards in time."
    assert next(e for e in result if e.msgid == line + "\n").msgstr == shipped.translate([line], "en", "fr", beam_size=2)[0].text + "\n"


def test_a_text_file_that_mixes_languages_with_auto(tmp_path, shipped):
    """``--source auto``: each paragraph (each run of sentences) from its own language; what is
    already in the target language stays as written."""
    fr1 = "Ma sœur habite dans une petite maison près de la rivière."
    src = tmp_path / "mixed.txt"
    src.write_text(f"{fr1}\n\n{S1} {fr1}\n\n{S2}\n")
    out = tmp_path / "mixed.en.txt"
    run = cli(str(src), str(out), "--source", "auto", "--target", "en", "--beam-size", "2", "--workers", "1", "--threads", "1", "-q")
    assert run.returncode == 0, run.stderr
    to_en = shipped.translate([fr1], "fr", "en", beam_size=2, max_length=256)[0].text
    assert out.read_text() == f"{to_en}\n\n{S1} {to_en}\n\n{S2}\n"


def test_refused_files_exit_2_with_the_reason(tmp_path):
    bomb = tmp_path / "bomb.docx"
    bomb.write_bytes(zip_bomb("word/document.xml", 80 << 20))
    run = cli(str(bomb), str(tmp_path / "out.docx"), "--source", "en", "--target", "fr", "--max-unpacked-bytes", "10000000")
    assert run.returncode == 2 and "the limit is 10,000,000 bytes (--max-unpacked-bytes)" in run.stderr
    exe = tmp_path / "setup.exe"
    exe.write_bytes(b"MZ")
    run = cli(str(exe), str(tmp_path / "out.exe"), "--source", "en", "--target", "fr")
    assert run.returncode == 2 and "unsupported file type '.exe'; supported: .txt" in run.stderr
    assert not (tmp_path / "out.docx").exists() and not (tmp_path / "out.exe").exists()
