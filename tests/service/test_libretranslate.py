"""LibreTranslate clients against a real server with the shipped translator: ``libretranslatepy``,
and raw requests shaped like LibreTranslate's own web UI (``multipart/form-data`` from a browser
``FormData``, JSON), with ``source: "auto"``, ``/detect``, HTML and alternatives.  Translations are
checked against the same model called directly in this process."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from bs4 import BeautifulSoup
from libretranslatepy import LibreTranslateAPI

from rendition.model.text.language_id import LanguageDetector
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

EN = "This package contains the development files of the library."
FR = "Ce paquet contient les fichiers de développement de la bibliothèque."


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(translator_path=DEFAULT_TRANSLATOR, default_beam_size=2, default_max_length=256,
                        truncate_translations=0, models="translator")


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


def direct(tr: Translator, text: str, source: str, target: str, n: int = 1) -> list[str]:
    return [h for h, _ in tr.translate([text], source, target, beam_size=max(2, n), num_hypotheses=n)[0].hypotheses]


def test_libretranslatepy_auto_detect_and_languages(server, shipped):
    lt = LibreTranslateAPI(server.url)
    assert lt.translate(EN, "auto", "fr", timeout=60) == direct(shipped, EN, "en", "fr")[0]
    assert lt.translate(FR, "fr", "en", timeout=60) == direct(shipped, FR, "fr", "en")[0]
    found = lt.detect(FR, timeout=60)
    assert [d["language"] for d in found] == ["fr", "en"]
    assert found[0]["confidence"] > 90 and sum(d["confidence"] for d in found) == pytest.approx(100, abs=0.2)
    expected = LanguageDetector(("en", "fr")).detect(FR)[0][1]
    assert found[0]["confidence"] == round(100 * expected, 1)
    assert lt.languages(timeout=60) == [
        {"code": "en", "name": "English", "targets": ["fr"]},
        {"code": "fr", "name": "French", "targets": ["en"]},
    ]


def test_web_ui_multipart_form_with_auto_and_alternatives(server, shipped):
    # what LibreTranslate's web UI sends: a FormData (multipart), source auto, 3 alternatives, an empty key
    fields = {"q": EN, "source": "auto", "target": "fr", "format": "text", "alternatives": "3", "api_key": ""}
    r = server.http.post("/translate", files=[(k, (None, v)) for k, v in fields.items()])
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    body = r.json()
    nbest = direct(shipped, EN, "en", "fr", n=4)
    assert body["translatedText"] == nbest[0]
    assert body["alternatives"] == list(dict.fromkeys(h for h in nbest[1:] if h != nbest[0]))
    assert len(set(body["alternatives"])) == len(body["alternatives"]) and nbest[0] not in body["alternatives"]
    assert body["detectedLanguage"]["language"] == "en" and 50 < body["detectedLanguage"]["confidence"] <= 100
    # the UI's other calls
    settings = server.http.get("/frontend/settings").json()
    assert settings["language"]["source"] == {"code": "auto", "name": "Auto Detect"}
    assert settings["charLimit"] == 4000 and settings["keyRequired"] is False
    detect = server.http.post("/detect", files=[("q", (None, FR)), ("api_key", (None, ""))])
    assert detect.status_code == 200 and detect.json()[0]["language"] == "fr"


def test_json_batch_with_auto_detects_each_text(server, shipped):
    r = server.http.post("/translate", json={"q": [EN, FR], "source": "auto", "target": "en"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [d["language"] for d in body["detectedLanguage"]] == ["en", "fr"]
    # a text already in the target language comes back as it is
    assert body["translatedText"] == [EN, direct(shipped, FR, "fr", "en")[0]]


def test_the_native_route_detects_each_text_with_source_auto(server, shipped):
    """``POST /v1/translate`` with ``source: "auto"``: each text from its detected language, that
    language in its result; one already in the target language comes back as it is."""
    r = server.http.post("/v1/translate", json={"text": [EN, FR], "source": "auto", "target": "en", "return_scores": True})
    assert r.status_code == 200, r.text
    body = r.json()
    det = LanguageDetector(("en", "fr"))
    got = [x["detected_language"] for x in body["results"]]
    assert [d["language"] for d in got] == ["en", "fr"]
    assert [d["confidence"] for d in got] == [round(100 * det.detect(t)[0][1], 1) for t in (EN, FR)]
    assert [x["text"] for x in body["results"]] == [EN, direct(shipped, FR, "fr", "en")[0]]
    assert body["results"][0]["score"] == 0.0 and body["model"] == "rendition-translator"
    alone = server.http.post("/v1/translate", json={"text": FR, "source": "fr", "target": "en"}).json()
    assert body["usage"] == alone["usage"]  # (only the French text was translated)
    assert "detected_language" not in alone["results"][0]  # (only with auto)
    # every text already in the target language: nothing is translated
    same = server.http.post("/v1/translate", json={"text": EN, "source": "auto", "target": "en"}).json()
    assert same["results"][0]["text"] == EN and same["model"] == "none" and same["usage"]["source_tokens"] == 0
    # a target no loaded translator reaches: the same 400 as with a given source
    bad = server.http.post("/v1/translate", json={"text": EN, "source": "auto", "target": "xx"})
    assert bad.status_code == 400 and "unsupported language pair en-xx" in bad.text


def test_auto_translates_each_language_of_a_mixed_text(server, shipped):
    """A text with sentences in both languages and ``source: "auto"``: each run from its own
    language, the sentences already in the target language kept as written, the gaps as they were."""
    en2 = "My uncle has three children and two dogs."
    mixed = f"{EN} {FR}\n\n{en2}"
    for target, kept in (("en", (EN, en2)), ("fr", (FR,))):
        r = server.http.post("/v1/translate", json={"text": mixed, "source": "auto", "target": target})
        assert r.status_code == 200, r.text
        out = r.json()["results"][0]["text"]
        if target == "en":
            assert out == f"{EN} {direct(shipped, FR, 'fr', 'en')[0]}\n\n{en2}"
        else:
            assert out == f"{direct(shipped, EN, 'en', 'fr')[0]} {FR}\n\n{direct(shipped, en2, 'en', 'fr')[0]}"
        assert all(k in out for k in kept)
    # LibreTranslate's route and an HTML text node, the same way
    r = server.http.post("/translate", json={"q": f"<p>{EN} {FR}</p>", "source": "auto", "target": "en", "format": "html"})
    assert r.status_code == 200 and r.json()["translatedText"] == f"<p>{EN} {direct(shipped, FR, 'fr', 'en')[0]}</p>", r.text


def test_html_translates_paragraphs_and_keeps_the_markup(server, shipped):
    html = (
        '<div class="doc" data-x=\'1\'><h1>Development files</h1>\n'
        '<p>This package contains the development files. <a href="/lib?a=1&amp;b=2">See the library</a></p>'
        '<!-- a comment stays --><script>var s = "Hello";</script><br/><pre>Hello <b>world</b></pre><code>Good night</code></div>'
    )
    r = server.http.post("/translate", json={"q": html, "source": "en", "target": "fr", "format": "html"})
    assert r.status_code == 200, r.text
    out = r.json()["translatedText"]
    nodes = ["Development files", "This package contains the development files.", "See the library"]
    t = [direct(shipped, x, "en", "fr")[0] for x in nodes]
    assert out == (
        f'<div class="doc" data-x="1"><h1>{t[0]}</h1>\n'
        f'<p>{t[1]} <a href="/lib?a=1&amp;b=2">{t[2]}</a></p>'
        '<!-- a comment stays --><script>var s = "Hello";</script><br/><pre>Hello <b>world</b></pre><code>Good night</code></div>'
    )  # (code and preformatted text as they are, as in an uploaded .html file)
    before, after = BeautifulSoup(html, "html.parser"), BeautifulSoup(out, "html.parser")
    assert [(x.name, x.attrs) for x in before.find_all(True)] == [(x.name, x.attrs) for x in after.find_all(True)]


@pytest.mark.parametrize(
    "html, inline",
    [
        ("<p>The <b>red</b> car is fast.</p>", "red"),
        ('<p>Click <a href="/help#save">Save</a> to keep your changes.</p>', "Save"),
    ],
)
def test_html_inline_markup_stays_on_the_words_that_translate_it(server, shipped, html, inline):
    """The paragraph is translated as one sentence (not node by node), and the bold word or the
    link ends up on the words that translate it, wherever the translation puts them."""
    soup = BeautifulSoup(html, "html.parser")
    whole, own = direct(shipped, soup.get_text(), "en", "fr")[0], direct(shipped, inline, "en", "fr")[0]
    assert own.lower() in whole.lower()  # (what this test relies on: the phrase translates the same inside the sentence)
    r = server.http.post("/translate", json={"q": html, "source": "en", "target": "fr", "format": "html"})
    assert r.status_code == 200, r.text
    out = BeautifulSoup(r.json()["translatedText"], "html.parser")
    assert out.get_text() == whole
    element = out.find(soup.p.find(True).name)
    assert element.get_text().lower() == own.lower() and element.attrs == soup.p.find(True).attrs


def test_html_inline_code_is_kept_in_its_place(server, shipped):
    """Inline code goes through the sentence's translation as a placeholder: not translated, and
    where the translation puts it."""
    whole = direct(shipped, "Run {0} as root.", "en", "fr")[0]
    assert whole.count("{0}") == 1
    r = server.http.post(
        "/translate",
        json={"q": "<p>Run <code>make install</code> as root.</p>", "source": "en", "target": "fr", "format": "html"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["translatedText"] == "<p>" + whole.replace("{0}", "<code>make install</code>") + "</p>"


def test_a_full_queue_is_libretranslates_429(start_server):
    srv = start_server(max_queue=1, max_items=1, batch_delay_ms=1000, translation_workers=1, models="translator")
    body = {"q": "Hello.", "source": "en", "target": "fr"}
    with ThreadPoolExecutor(3) as pool:  # one runs (1 s), one waits in the queue of 1, one is refused
        answers = list(pool.map(lambda _: srv.http.post("/translate", json=body), range(3)))
    refused = [r for r in answers if r.status_code == 429]
    assert refused and all(r.status_code in (200, 429) for r in answers), [r.status_code for r in answers]
    assert isinstance(refused[0].json()["error"], str) and int(refused[0].headers["retry-after"]) >= 1


@pytest.mark.parametrize("path,field", [("/translate", "q"), ("/v1/translate", "text")])
def test_auto_refuses_a_text_surely_in_a_language_not_served(server, path, field) -> None:
    """A German text with ``source: "auto"`` on the English-French server is a 400 naming the
    language, not a nonsense translation from English; a short or borderline text is translated."""
    german = "Guten Morgen, wie geht es dir heute?"
    r = server.http.post(path, json={field: german, "source": "auto", "target": "fr"})
    assert r.status_code == 400, r.text
    assert "German (de)" in r.text and "en, fr" in r.text and "name the source language" in r.text
    r = server.http.post(path, json={field: ["Good morning.", german], "source": "auto", "target": "fr"})
    assert r.status_code == 400 and f"{field}[1]" in r.text
    ok = server.http.post(path, json={field: ["Hallo", "Pizza margherita, s'il vous plaît."], "source": "auto", "target": "en"})
    assert ok.status_code == 200, ok.text
    named = server.http.post(path, json={field: german, "source": "en", "target": "fr"})
    assert named.status_code == 200  # named: translated as asked
