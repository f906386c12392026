"""Glossaries over real HTTP against a real server with the shipped translator: a request's own
terms and server glossaries by name on ``/v1/translate``, LibreTranslate's ``/translate`` (JSON and
form) and ``/translate_file``; text without a term comes back exactly as without a glossary; bad
glossaries and unknown names get a 4xx naming the problem; the terms are counted in /metrics."""

from __future__ import annotations

import json

import pytest

from rendition.model.translation.translator import DEFAULT_TRANSLATOR

TERMS = {"kernel": "noyau Linux", "trash": "poubelle"}
WITH_TERMS = "The kernel could not be updated."
WITHOUT = "This package contains the development files of the library."


@pytest.fixture(scope="module")
def server(start_server, tmp_path_factory):
    root = tmp_path_factory.mktemp("glossaries")
    (root / "en-fr").mkdir()
    (root / "en-fr" / "it.tsv").write_text("# IT terms\nkernel\tnoyau Linux\ntrash\tpoubelle\n", encoding="utf-8")
    (root / "en-fr" / "broken.tsv").write_text("kernel noyau\n", encoding="utf-8")
    return start_server(
        translator_path=DEFAULT_TRANSLATOR, default_beam_size=2, default_max_length=256, truncate_translations=0,
        models="translator", glossary_dir=root, glossary_max_terms=5,
    )  # fmt: skip


def translate(server, **body):
    return server.http.post("/v1/translate", json={"source": "en", "target": "fr"} | body, timeout=120)


def test_request_glossary_puts_the_terms_and_leaves_other_text_alone(server) -> None:
    before = server.sample("rendition_glossary_terms", "_total", outcome="placed")
    plain = translate(server, text=[WITH_TERMS, WITHOUT, "Empty the trash. Then restart."])
    r = translate(server, text=[WITH_TERMS, WITHOUT, "Empty the trash. Then restart."], glossary=TERMS)
    assert r.status_code == 200, r.text
    got = [x["text"] for x in r.json()["results"]]
    assert "noyau Linux" in got[0] and "noyau Linux" not in plain.json()["results"][0]["text"]
    assert got[1] == plain.json()["results"][1]["text"]  # no term: exactly the same translation
    assert "poubelle" in got[2]
    assert got[2].split(". ")[1:] == plain.json()["results"][2]["text"].split(". ")[1:]  # its other sentence too
    assert server.sample("rendition_glossary_terms", "_total", outcome="placed") - before >= 2


def test_server_glossary_by_name(server) -> None:
    r = translate(server, text=WITH_TERMS, glossary_name="it")
    assert r.status_code == 200, r.text
    assert "noyau Linux" in r.json()["results"][0]["text"]
    # the request's own terms win over the file's
    r = translate(server, text=WITH_TERMS, glossary_name="it", glossary={"Kernel": "cœur"})
    assert r.status_code == 200, r.text
    assert "cœur" in r.json()["results"][0]["text"] and "noyau" not in r.json()["results"][0]["text"]


def test_unknown_names_and_bad_glossaries_are_refused_naming_the_problem(server) -> None:
    r = translate(server, text=WITH_TERMS, glossary_name="medical")
    assert r.status_code == 404, r.text
    assert "'medical'" in r.text and "en-fr" in r.text and "it" in r.text
    r = translate(server, text=WITH_TERMS, glossary_name="it", target="en", source="fr")
    assert r.status_code == 404 and "fr-en" in r.text, r.text
    r = translate(server, text=WITH_TERMS, glossary_name="../en-fr/it")
    assert r.status_code == 422 and "not a glossary name" in r.text, r.text
    r = translate(server, text=WITH_TERMS, glossary_name="broken")
    assert r.status_code == 422 and "line 1" in r.text, r.text
    for glossary, words in (
        ({"": "vide"}, "empty"),
        ({"File": "fichier", "file": "dossier"}, "given twice"),
        ({f"t{i}": "u" for i in range(6)}, "RENDITION_GLOSSARY_MAX_TERMS"),
        ({"kernel": 3}, "glossary"),
        (["kernel", "noyau"], "glossary"),
    ):
        r = translate(server, text=WITH_TERMS, glossary=glossary)
        assert r.status_code == 422, r.text
        assert words in r.text, r.text


def test_libretranslate_json_and_form(server) -> None:
    r = server.http.post("/translate", json={"q": WITH_TERMS, "source": "en", "target": "fr", "glossary": TERMS})
    assert r.status_code == 200, r.text
    assert "noyau Linux" in r.json()["translatedText"]
    form = {"q": WITH_TERMS, "source": "en", "target": "fr", "glossary": json.dumps(TERMS)}
    r = server.http.post("/translate", data=form)
    assert r.status_code == 200, r.text
    assert "noyau Linux" in r.json()["translatedText"]
    r = server.http.post("/translate", data=form | {"glossary": "{not json"})
    assert r.status_code in (400, 422) and "JSON" in r.json()["error"], r.text
    r = server.http.post("/translate", data={"q": WITH_TERMS, "source": "en", "target": "fr", "glossary_name": "it"})
    assert r.status_code == 200 and "noyau Linux" in r.json()["translatedText"], r.text


def test_translate_file_with_a_glossary(server) -> None:
    data = f"{WITH_TERMS}\n\n{WITHOUT}\n".encode()
    fields = {"source": "en", "target": "fr", "glossary": json.dumps(TERMS)}
    r = server.http.post("/translate_file", files={"file": ("notes.txt", data)}, data=fields, timeout=300)
    assert r.status_code == 200, r.text
    text = server.http.get(r.json()["translatedFileUrl"]).content.decode()
    assert "noyau Linux" in text.split("\n\n")[0]
    plain = translate(server, text=WITHOUT).json()["results"][0]["text"]
    assert text.split("\n\n")[1].strip() == plain
    r = server.http.post(
        "/translate_file", files={"file": ("notes.txt", data)}, data=fields | {"glossary_name": "nope"}, timeout=300
    )
    assert r.status_code == 404 and "nope" in r.text, r.text
