"""Several language pairs in one server, over real HTTP: the shipped en-fr translator and a tiny
en-de one trained by the fixture (``tests.model.tiny_pair``), both pair packages of one
``RENDITION_MODELS_DIR``.  en->de is answered by the de model, fr->de goes through English
(fr->en by the en-fr model, then en->de), every language shows in ``/languages``, ``/v1/models``
and ``source: "auto"``; an unloaded pair is a 400 naming the loaded ones; two translators of one
direction stop the server at start-up; a single ``RENDITION_TRANSLATOR_PATH`` serves as before."""

from __future__ import annotations

import os
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from rendition.model.text.cli import translate_lines
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator
from tests.model.tiny_pair import train_tiny_en_de

pytestmark = pytest.mark.slow

SEARCH = {"beam_size": 2, "max_length": 16}
FRENCH = ["Le chat dort.", "Ouvrez le fichier et enregistrez le document.", "Bonjour le monde."]
ENGLISH = ["Open the file.", "The cat sleeps."]
GERMAN = "Dieses Paket enthält die Übersetzungen und die Dokumentation für die Bibliothek."


@pytest.fixture(scope="session")
def en_de(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return train_tiny_en_de(tmp_path_factory.mktemp("tiny-en-de"))


@pytest.fixture(scope="module")
def models_dir(en_de: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("pairs")
    (d / "en-fr").symlink_to(DEFAULT_TRANSLATOR)
    shutil.copytree(en_de, d / "en-de")
    (d / "notes").mkdir()  # (no translator config: not a pair package)
    return d


@pytest.fixture(scope="module")
def server(start_server, models_dir: Path):
    return start_server(models="translator", translator_path="", models_dir=models_dir)


def translate(server, texts: list[str], source: str, target: str) -> tuple[list[str], str]:
    r = server.http.post("/v1/translate", json={"text": texts, "source": source, "target": target, **SEARCH}, timeout=120)
    assert r.status_code == 200, r.text
    return [x["text"] for x in r.json()["results"]], r.json()["model"]


def test_each_pair_is_answered_by_its_own_translator(server, en_de: Path) -> None:
    got, model = translate(server, ENGLISH, "en", "de")
    assert model == "rendition-translator-de-en"
    de = Translator.from_pretrained(en_de, compute_type="float32")
    assert got == translate_lines(de, ENGLISH, "en", "de", progress=False, **SEARCH)
    assert len(set(got)) > 1  # (its output depends on the input)
    got, model = translate(server, ["Bonjour le monde."], "fr", "en")
    assert model == "rendition-translator-en-fr" and "world" in got[0].lower()


def test_french_to_german_goes_through_english(server) -> None:
    before = server.sample("rendition_translations", "_total", pair="fr-de", route="english")
    retried = server.sample("rendition_length_fallbacks", "_total")
    through, model = translate(server, FRENCH, "fr", "de")
    assert server.sample("rendition_length_fallbacks", "_total") > retried  # (the tiny model's leg runs to its limit: decoded again)
    assert model == "rendition-translator-en-fr+rendition-translator-de-en"
    english, _ = translate(server, FRENCH, "fr", "en")
    by_hand, _ = translate(server, english, "en", "de")
    assert through == by_hand
    direct_german, _ = translate(server, FRENCH, "en", "de")  # (the French read as English: not what the pivot reads)
    assert through != direct_german
    assert server.sample("rendition_translations", "_total", pair="fr-de", route="english") == before + len(FRENCH)
    lt = server.http.post("/translate", json={"q": FRENCH[0], "source": "fr", "target": "de"}, timeout=120)  # (its defaults)
    native = server.http.post("/v1/translate", json={"text": FRENCH[0], "source": "fr", "target": "de"}, timeout=120)
    assert lt.status_code == 200 and lt.json()["translatedText"] == native.json()["results"][0]["text"]
    glossary = {"text": "Le chat dort.", "source": "fr", "target": "de", "glossary": {"chat": "Katze"}, **SEARCH}
    r = server.http.post("/v1/translate", json=glossary, timeout=120)  # (a fr->de glossary: French terms, German output)
    assert r.status_code == 200 and "Katze" in r.json()["results"][0]["text"] and "chat" not in r.json()["results"][0]["text"]
    txt = server.http.post("/translate_file", files={"file": ("a.txt", FRENCH[0].encode())}, data={"source": "fr", "target": "de"}, timeout=120)
    assert txt.status_code == 200, txt.text


def test_every_loaded_language_is_listed(server) -> None:
    langs = {x["code"]: x for x in server.http.get("/languages").json()}
    assert list(langs) == ["de", "en", "fr"]
    assert langs["de"]["name"] == "German" and langs["de"]["targets"] == ["en", "fr"]
    assert langs["fr"]["targets"] == ["de", "en"] and langs["en"]["targets"] == ["de", "fr"]
    models = {m["id"]: m for m in server.http.get("/v1/models").json()["data"]}
    de, fr = models["rendition-translator-de-en"], models["rendition-translator-en-fr"]
    assert de["languages"] == ["de", "en"] and de["directions"] == ["de-en", "en-de"]
    assert fr["directions"] == ["en-fr", "fr-en"] and fr["through_english"] == de["through_english"] == ["de-fr", "fr-de"]
    ready = server.http.get("/health/ready").json()
    assert ready["models"] == ["translator", "translator-en-fr"]  # (a queue per translator; the first keeps its name)
    schema = server.http.get("/openapi.json").json()["components"]["schemas"]["TranslateRequest"]
    assert "through English" in schema["properties"]["source"]["description"]


def test_auto_detects_german_among_the_loaded_languages(server) -> None:
    found = server.http.post("/detect", json={"q": GERMAN}).json()
    assert found[0]["language"] == "de" and {x["language"] for x in found} == {"de", "en", "fr"}
    r = server.http.post("/translate", json={"q": GERMAN, "source": "auto", "target": "fr", "beam_size": 2}, timeout=120)
    assert r.status_code == 200, r.text
    assert r.json()["detectedLanguage"]["language"] == "de"


@pytest.mark.parametrize("path,body", [
    ("/v1/translate", {"text": "Hello.", "source": "en", "target": "es"}),
    ("/translate", {"q": "Hello.", "source": "en", "target": "es"}),
    ("/v1/translate", {"text": "Hallo.", "source": "de", "target": "de"}),
])  # fmt: skip
def test_a_pair_nobody_loaded_is_a_400_naming_the_loaded_pairs(server, path: str, body: dict) -> None:
    r = server.http.post(path, json=body)
    assert r.status_code == 400, r.text
    message = r.text
    assert "supported: de-en, en-de, en-fr, fr-en; through English: de-fr, fr-de" in message


def test_two_translators_of_one_direction_stop_the_server(start_server, en_de: Path, tmp_path: Path) -> None:
    other = shutil.copytree(en_de, tmp_path / "other-en-de")
    srv = start_server(wait=False, models="translator", translator_path=f"{en_de}{os.pathsep}{other}")
    assert srv.proc.wait(timeout=120) == 1
    assert "two translators serve de->en" in srv.log() and str(other) in srv.log()


def test_one_translator_path_serves_as_before(start_server) -> None:
    srv = start_server(models="translator")  # (the random en-fr translator of model_dirs)
    assert [(x["code"], x["targets"]) for x in srv.http.get("/languages").json()] == [("en", ["fr"]), ("fr", ["en"])]
    (model,) = srv.http.get("/v1/models").json()["data"]
    assert model["id"] == "rendition-translator" and model["through_english"] == []
    r = srv.http.post("/v1/translate", json={"text": "Hello.", "source": "en", "target": "fr"})
    assert r.status_code == 200 and r.json()["model"] == "rendition-translator"
    assert srv.http.get("/health/ready").json()["models"] == ["translator"]


@pytest.mark.parametrize("flooded, other", [(("en", "de"), ("fr", "en")), (("fr", "en"), ("en", "de"))])
def test_one_pairs_full_queue_refuses_only_its_own_requests(start_server, models_dir: Path, flooded, other) -> None:
    # one worker, one sentence at a time, 2 s whenever a sentence joins it, two sentences queued at most:
    # five requests to one pair fill its queue (each pair in turn, so the first loaded translator's is one of them)
    srv = start_server(models="translator", translator_path="", models_dir=models_dir, batch_delay_ms=2000,
                       translation_workers=1, max_batch_size=1, max_queue=2, max_items=2, default_beam_size=1, default_max_length=4)  # fmt: skip

    def post(pair: tuple[str, str]) -> httpx.Response:
        return httpx.post(srv.url + "/v1/translate", json={"text": "Open the file.", "source": pair[0], "target": pair[1]}, timeout=60)

    with ThreadPoolExecutor(6) as pool:
        flood = [pool.submit(post, flooded) for _ in range(5)]
        deadline = time.monotonic() + 60
        while srv.sample("rendition_queue_depth") < 2:  # (the other queues are empty)
            if time.monotonic() > deadline or all(f.done() for f in flood):  # (bounded: never a hang)
                pytest.fail(f"the flooded queue never held 2 sentences: {[f.result().status_code for f in flood if f.done()]}")
            time.sleep(0.05)
        r = post(other)
        assert r.status_code == 200, (r.text, r.headers)  # (its own queue is empty: not refused for the other pair's)
        statuses = sorted(f.result().status_code for f in flood)
    assert statuses.count(200) >= 3 and set(statuses) <= {200, 429}, statuses
