"""``RENDITION_SHORTLIST``: a real server translating with the translator directory's vocabulary
shortlist (the same results as the library with it), and one without the file exiting with a
clear error."""

from __future__ import annotations

import shutil

from rendition.model.export.shortlist import build_from_pairs
from rendition.model.tokenizer import Tokenizer
from rendition.model.translation.shortlist import FILENAME
from rendition.model.translation.translator import Translator

PAIRS = [("Hello", "Bonjour"), ("Open the file", "Ouvrir le fichier"), ("The cat sleeps", "Le chat dort")]


def test_the_shortlist_setting_serves_the_directorys_shortlist(start_server, model_dirs, tmp_path):
    d = tmp_path / "translator"
    shutil.copytree(model_dirs["translator"], d)
    tok = Tokenizer(d / "sentencepiece.model")
    en, fr = tok.encode([a for a, _ in PAIRS]), tok.encode([b for _, b in PAIRS])
    build_from_pairs(en + fr, fr + en, tok.vocab_size, top_k=5, frequent=20).save(d / FILENAME)
    srv = start_server(models="translator", translator_path=d, shortlist="true")
    info = srv.http.get("/v1/models").json()["data"][0]
    assert info["shortlist"] is True
    ref = Translator.from_pretrained(d, device="cpu", compute_type="float32", shortlist=True)
    for text in ("Hello", "Open the cat file"):
        got = srv.http.post("/v1/translate", json={"text": text, "source": "en", "target": "fr", "beam_size": 2, "max_length": 8})
        want = ref.translate([text], "en", "fr", beam_size=2, max_length=8)[0].text
        assert got.status_code == 200 and got.json()["results"][0]["text"] == want
    srv.stop()


def test_the_shortlist_setting_without_the_file_exits_with_a_clear_error(start_server, model_dirs, tmp_path):
    d = tmp_path / "translator"
    shutil.copytree(model_dirs["translator"], d)
    srv = start_server(wait=False, models="translator", translator_path=d, shortlist="true")
    assert srv.proc.wait(timeout=90) == 1
    assert "model loading failed" in srv.log() and "build-shortlist" in srv.log()
