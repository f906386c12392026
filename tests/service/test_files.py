"""``POST /translate_file`` and ``GET /download_file`` over real HTTP against a real server with the
shipped translator: real .docx, .pptx, .odt, .html, .txt, .srt files and a real Debian gettext
catalog, each translated text checked against the same model called directly in this process;
hostile files (a zip bomb, billion laughs, wrong content, oversize) get a 4xx naming the limit."""

from __future__ import annotations

import os
import time

import polib
import pytest
import srt
from bs4 import BeautifulSoup

from rendition.model.documents import FORMATS
from rendition.model.text.placeholders import placeholders
from rendition.model.text.segment import InputTooLong
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator
from rendition.service.routers.files import FileStore
from tests.model.documents.helpers import (
    BILLION_LAUGHS,
    make_docx,
    make_epub,
    make_odp,
    make_odt,
    make_pptx,
    msgfmt_check,
    read_docx,
    read_epub,
    read_odp,
    read_odt,
    read_pptx,
    replace_member,
    zip_bomb,
)

KEY = "file-test-key"
REAL_PO = DEFAULT_TRANSLATOR.parents[2] / "tests" / "model" / "documents" / "data" / "pg_test_timing-15.fr.po"
S1 = "This package contains the development files of the library."
S2 = "The documentation is in a separate package."


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(
        translator_path=DEFAULT_TRANSLATOR, default_beam_size=2, default_max_length=256, truncate_translations=0,
        models="translator", api_keys=KEY, max_file_bytes=200_000, max_file_unpacked_bytes=10_000_000,
    )  # fmt: skip


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


def direct(tr: Translator, text: str, source: str = "en", target: str = "fr") -> str:
    return tr.translate([text], source, target, beam_size=2, max_length=256)[0].text


def send(server, name: str, data: bytes, source: str = "en", target: str = "fr", key: str | None = KEY):
    fields = {"source": source, "target": target, **({"api_key": key} if key is not None else {})}
    return server.http.post(
        "/translate_file", files={"file": (name, data)}, data=fields, timeout=300
    )


def translated(server, name: str, data: bytes, **kw) -> bytes:
    r = send(server, name, data, **kw)
    assert r.status_code == 200, r.text
    url = r.json()["translatedFileUrl"]
    assert url.startswith(server.url + "/download_file/")
    got = server.http.get(url)
    assert got.status_code == 200, got.text
    assert got.headers["content-type"].split(";")[0] == FORMATS["." + name.rsplit(".", 1)[1]][1].split(";")[0]
    assert name in got.headers["content-disposition"]
    return got.content


def test_frontend_settings_announce_file_translation(server):
    body = server.http.get("/frontend/settings").json()
    assert body["filesTranslation"] is True
    assert set(body["supportedFilesFormat"]) == {".txt", ".html", ".htm", ".md", ".markdown", ".docx", ".pptx", ".odt", ".odp", ".epub", ".po", ".pot", ".srt"}


def test_docx_paragraphs_and_runs(server, shipped):
    data = make_docx([[("This package contains ", False), ("the development files", True), (" of the library.", False)],
                      [(S2, False)]])  # fmt: skip
    paragraphs = read_docx(translated(server, "guide.docx", data))
    assert ["".join(t for t, _ in p) for p in paragraphs] == [direct(shipped, S1), direct(shipped, S2)]
    assert [b for _, b in paragraphs[0]] == [False, True, False] and len(paragraphs[1]) == 1


def test_pptx_odt_odp_epub_html_md_txt_srt(server, shipped):
    t1, t2 = direct(shipped, S1), direct(shipped, S2)
    assert read_pptx(translated(server, "deck.pptx", make_pptx(S1, [[(S2, True)]]))) == [[(t1, None)], [(t2, True)]]
    assert read_odt(translated(server, "doc.odt", make_odt(S1, [(S2, True)]))) == [t1, t2]
    assert read_odp(translated(server, "deck.odp", make_odp([(S1, [(S2, False)])]))) == [t1, t2, direct(shipped, f"Notes: {S1}")]
    book = read_epub(translated(server, "book.epub", make_epub(S1, [(S1, f"<h1>{S1}</h1><p>{S2}</p>")])))
    assert f"<h1>{t1}</h1>" in book["chap0.xhtml"] and f"<p>{t2}</p>" in book["chap0.xhtml"] and f"<text>{t1}</text>" in book["toc.ncx"]
    html = f"<html><head><script>var a = 'Hello';</script></head><body><h1>{S1}</h1><p>{S2}</p></body></html>"
    out = BeautifulSoup(translated(server, "page.html", html.encode()).decode(), "html.parser")
    assert [out.h1.string, out.p.string, out.script.string] == [t1, t2, "var a = 'Hello';"]
    assert translated(server, "notes.txt", f"{S1}\n\n{S2}\n".encode()).decode() == f"{t1}\n\n{t2}\n"
    assert translated(server, "README.md", f"# {S1}\n\n{S2}\n\n```\n{S2}\n```\n".encode()).decode() == f"# {t1}\n\n{t2}\n\n```\n{S2}\n```\n"
    subs = f"1\n00:00:01,000 --> 00:00:03,000\n{S1}\n\n2\n00:00:04,000 --> 00:00:05,500\n{S2}\n\n"
    got = list(srt.parse(translated(server, "film.srt", subs.encode()).decode()))
    assert [(s.index, s.start, s.end, s.content) for s in got] == [
        (s.index, s.start, s.end, t) for s, t in zip(srt.parse(subs), [t1, t2])
    ]


def test_a_document_that_mixes_languages_with_auto_source(server, shipped):
    """``source: auto`` on a document with English and French paragraphs (and a paragraph of both):
    each run from its own language; what is already in the target language stays as written."""
    fr1 = "Ma sœur habite dans une petite maison près de la rivière."
    text = f"{S1}\n\n{fr1}\n\n{S2} {fr1}\n"
    assert translated(server, "mixed.txt", text.encode(), source="auto", target="fr").decode() == (
        f"{direct(shipped, S1)}\n\n{fr1}\n\n{direct(shipped, S2)} {fr1}\n"
    )
    to_en = direct(shipped, fr1, "fr", "en")
    assert translated(server, "mixed.txt", text.encode(), source="auto", target="en").decode() == f"{S1}\n\n{to_en}\n\n{S2} {to_en}\n"


def test_real_debian_catalog_with_auto_source(server, shipped, tmp_path):
    po = polib.pofile(str(REAL_PO))
    for e in po:
        e.msgstr = ""
        if e.msgid_plural:
            e.msgstr_plural = {0: "", 1: ""}
    out = tmp_path / "fr.po"
    out.write_bytes(translated(server, "fr.po", str(po).encode(), source="auto"))
    check = msgfmt_check(out)
    assert check.returncode == 0, check.stderr
    result = {e.msgid: e for e in polib.pofile(str(out))}
    for e in po:
        if not e.msgid:
            continue
        got = result[e.msgid]
        if not (got.msgstr or got.msgstr_plural):  # left untranslated: a placeholder did not come back
            assert "fuzzy" not in got.flags
            continue
        assert got.flags == [*e.flags, "fuzzy"]
        for src, dst in ([(e.msgid, got.msgstr_plural[0]), (e.msgid_plural, got.msgstr_plural[1])] if e.msgid_plural
                         else [(e.msgid, got.msgstr)]):  # fmt: skip
            assert placeholders(dst) == placeholders(src)
            assert dst.endswith("\n") == src.endswith("\n")
    simple = result["Detected clock going backwards in time.\n"].msgstr
    assert simple == direct(shipped, "Detected clock going backwards in time.") + "\n"
    assert sum(bool(e.msgstr or e.msgstr_plural) for e in result.values() if e.msgid) >= 10


def test_unknown_download_is_404(server):
    r = server.http.get("/download_file/nope")
    assert r.status_code == 404 and "RENDITION_FILE_KEEP_S" in r.json()["error"]


@pytest.mark.parametrize(
    "name, data, status, words",
    [
        ("setup.exe", b"MZ\x90\x00", 400, ["unsupported file type '.exe'", ".docx", ".po", ".srt"]),
        ("report.docx", b"This is plain text, not a Word document.", 400, ["not a valid .docx file"]),
        ("deck.pptx", make_docx([[("Hello", False)]]), 400, ["not a .pptx presentation"]),
        ("bomb.docx", zip_bomb("word/document.xml", 60 << 20), 413, ["10,000,000 bytes", "RENDITION_MAX_FILE_UNPACKED_BYTES"]),
        ("lol.docx", replace_member(make_docx([[("Hello", False)]]), "word/document.xml", BILLION_LAUGHS), 400,
         ["forbidden XML construct"]),
        ("big.txt", b"Hello world. " * 17_000, 413, ["200,000 bytes", "RENDITION_MAX_FILE_BYTES"]),
        ("huge.txt", b"Hello world. " * 40_000, 413, ["265536 bytes", "RENDITION_MAX_FILE_BYTES"]),
        ("bad.po", b"this is not a catalog\n", 400, ["not a valid gettext catalog: line 1: neither a keyword"]),
        ("open.po", b'msgid "a"\nmsgstr ""\n\nmsgid "no closing quote\n', 400,
         ["not a valid gettext catalog: line 4: a string without its closing quote"]),
        ("latin1.txt", "Café crème".encode("latin-1"), 400, ["not UTF-8"]),
    ],
)  # fmt: skip
def test_hostile_and_wrong_files_get_a_clear_4xx(server, name, data, status, words):
    r = send(server, name, data)
    assert r.status_code == status, r.text
    message = r.json()["error"]
    assert all(w in message for w in words), message


def test_form_errors_and_the_key(server):
    assert send(server, "a.txt", b"Hello.", key=None).status_code == 403
    assert send(server, "a.txt", b"Hello.", key="wrong").status_code == 403
    auth = {"Authorization": f"Bearer {KEY}"}
    r = server.http.post("/translate_file", data={"source": "en", "target": "fr"}, headers=auth)
    assert r.status_code == 415 and "multipart/form-data" in r.json()["error"]  # no file: not even multipart
    assert server.http.post("/translate_file", data={"source": "en", "target": "fr"}).status_code == 403
    r = server.http.post("/translate_file", files={"other": ("a.txt", b"x")}, data={"source": "en", "target": "fr", "api_key": KEY})
    assert r.status_code == 400 and "missing field 'file'" in r.json()["error"]
    r = send(server, "a.txt", b"Hello.", target="xx")
    assert r.status_code == 400 and "xx" in r.json()["error"]
    german = "Guten Morgen.\n\nDas Wetter ist heute sehr schön, wir gehen spazieren.\n".encode()
    r = send(server, "de.txt", german, source="auto")  # surely German: a 400, not a translation from English
    assert r.status_code == 400 and "German (de)" in r.json()["error"], r.text
    assert server.http.get("/health/ready").status_code == 200  # and the server is well


def test_a_text_the_translator_refuses_stays_as_it_was(server, shipped):
    giant = " ".join(["word"] * 1100)  # one sentence over the translator's input limit
    with pytest.raises(InputTooLong):
        shipped.translate([giant], "en", "fr")
    got = translated(server, "mixed.txt", f"{S1}\n\n{giant}\n\n{S2}\n".encode()).decode()
    assert got == f"{direct(shipped, S1)}\n\n{giant}\n\n{direct(shipped, S2)}\n"


def test_file_store_keeps_the_newest_for_a_while(tmp_path):
    store = FileStore(tmp_path, keep_s=100, keep_max=2)
    ids = []
    for i in range(3):
        ids.append(store.put(f"file {i}".encode(), f"f{i}.txt"))
        os.utime(tmp_path / ids[-1], (time.time() - 10 + i, time.time() - 10 + i))  # put in order, 1 s apart
    store.put(b"x", "trigger.txt")  # expiry runs on every put and get
    assert store.get(ids[0]) is None and store.get(ids[1]) is None and store.get(ids[2]).read_bytes() == b"file 2"
    os.utime(tmp_path / ids[2], (time.time() - 101, time.time() - 101))
    assert store.get(ids[2]) is None and not (tmp_path / ids[2]).exists()
    assert store.get("../../etc") is None and store.get("a" * 10) is None  # not an id
    other = FileStore(tmp_path, keep_s=100, keep_max=2)  # another replica on the same directory
    newest = store.put(b"shared", "s.txt")
    assert other.get(newest).read_bytes() == b"shared"
    store.close()
    assert tmp_path.exists()  # a configured directory is not removed
