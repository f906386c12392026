"""Long texts come back whole or are refused with the limit named: a real server with the shipped
translator (which ends its sentences) and the random encoder.

Each sentence of a multi-paragraph text is checked against the same model translating that
sentence alone in this process; the spacing and line breaks between them are the original ones.
"""

from __future__ import annotations

import pytest

from rendition.model.text.segment import split
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(
        translator_path=DEFAULT_TRANSLATOR, default_max_length=256, default_beam_size=2, truncate_translations=0,
        protect_spans=0,  # (each sentence is compared with the translator alone; tests/service/test_text_paths.py has the spans)
    )


@pytest.fixture(scope="module")
def shipped() -> Translator:
    return Translator.from_pretrained(device="cpu")


def long_text() -> str:
    """Two paragraphs of DDTP test descriptions (> 2,250 characters), a list and odd spacing."""
    lines = [p.src if p.src.endswith((".", "!", "?")) else p.src + "." for p in read_tsv(SPLITS_DIR / "test.en-fr.tsv")]
    first = " ".join(lines[:16])
    second = "  ".join(lines[16:22])
    text = f"{first}\n\n{second}\n - {lines[22]}\n - {lines[23]}\n"
    assert len(text) > 2250
    return text


def test_a_long_multi_paragraph_text_comes_back_whole(server, shipped) -> None:
    text = long_text()
    r = server.http.post("/v1/translate", json={"text": text, "source": "en", "target": "fr"})
    assert r.status_code == 200, r.text
    result = r.json()["results"][0]
    assert "truncated" not in result
    doc = split(text, "en")
    assert len(doc.sentences) > 20
    expected = [t.text for t in shipped.translate(doc.sentences, "en", "fr", beam_size=2, max_length=256)]
    assert result["text"] == doc.join(expected)  # every sentence, and the original gaps between them
    assert result["text"].count("\n\n") == 1 and result["text"].count("\n") == text.count("\n") == 5
    assert r.json()["usage"]["source_tokens"] == sum(len(x) for x in shipped.tokenizer.encode(doc.sentences))


def test_output_at_the_length_limit_is_refused_naming_it(server) -> None:
    body = {"text": ["Yes.", "This package contains the development files of the library."], "source": "en", "target": "fr"}
    r = server.http.post("/v1/translate", json=body | {"max_length": 6})
    assert r.status_code == 422, r.text
    msg = r.json()["detail"]
    assert "text[1]" in msg and "sentence 1" in msg and "max_length 6" in msg and "without ending" in msg
    # asked for: the cut text comes back marked
    r = server.http.post("/v1/translate", json=body | {"max_length": 6, "truncate": True})
    assert r.status_code == 200, r.text
    first, second = r.json()["results"]
    assert "truncated" not in first and second["truncated"] is True
    alone = server.http.post("/v1/translate", json=body | {"text": "Yes."}).json()["usage"]["target_tokens"]
    assert r.json()["usage"]["target_tokens"] == alone + 5  # "Yes." whole, the other cut at 5 tokens + the limit's EOS


def test_a_sentence_over_the_translators_input_limit_is_refused(server) -> None:
    r = server.http.post("/v1/translate", json={"text": "Fine. " + "zq" * 1000, "source": "en", "target": "fr"})
    assert r.status_code == 413, r.text
    msg = r.json()["detail"]
    assert "sentence 2 is 2000 tokens long" in msg and "at most 1022 tokens" in msg


def test_embeddings_over_the_encoder_limit_are_refused_or_cut_on_request(server) -> None:
    long = " ".join(["word"] * 100)  # the random encoder reads 64 tokens
    r = server.http.post("/v1/embeddings", json={"input": ["short", long]})
    assert r.status_code == 413, r.text
    assert r.json()["error"]["message"] == (
        "input[1] is 100 tokens long; the encoder reads at most 64 tokens (send truncate=true to cut it)"
    )
    r = server.http.post("/v1/embeddings", json={"input": ["short", long], "truncate": True})
    assert r.status_code == 200 and r.headers["x-rendition-truncated"] == "1"
    cut = server.http.post("/v1/embeddings", json={"input": " ".join(["word"] * 64)}).json()["data"][0]["embedding"]
    assert r.json()["data"][1]["embedding"] == pytest.approx(cut, abs=1e-6)
    assert r.json()["usage"]["prompt_tokens"] == 1 + 64


# -- CTranslate2-style decoding options (parity with CTranslate2 itself: tests/model/translation/test_ct2.py) ----

SRC = "This package contains the development files of the library. "


@pytest.mark.parametrize(
    "options",
    [
        {"repetition_penalty": 2.0},  # "de" is not repeated: "... de développement pour la bibliothèque"
        {"no_repeat_ngram_size": 1},
        {"min_length": 14},
        {"target_prefix": "Le paquet"},
    ],
)
def test_decoding_options_match_the_model_called_directly(server, shipped, options):
    body = {"text": SRC, "source": "en", "target": "fr", "return_scores": True, "beam_size": 2} | options
    r = server.http.post("/v1/translate", json=body)
    assert r.status_code == 200, r.text
    got = r.json()["results"][0]
    search = {k: v for k, v in options.items() if k != "target_prefix"}
    if "target_prefix" in options:
        search["target_prefix"] = tuple(shipped.tokenizer.encode([options["target_prefix"]])[0])
    ids = shipped.preprocess([SRC.strip()], "fr")
    (hyps,) = shipped.core(ids, TranslationOptions(beam_size=2, max_length=256, **search))
    assert got["text"].strip() == shipped.tokenizer.decode([hyps[0].tokens])[0]
    assert got["score"] == pytest.approx(hyps[0].score, abs=1e-4)
    plain = server.http.post("/v1/translate", json={"text": SRC, "source": "en", "target": "fr", "beam_size": 2})
    assert plain.json()["results"][0]["text"] != got["text"]  # the option changed the translation
    if "target_prefix" in options:
        assert got["text"].startswith("Le paquet")


def test_sampling_gives_diverse_drawn_hypotheses(server):
    body = {"text": SRC, "source": "en", "target": "fr", "return_scores": True}
    greedy = server.http.post("/v1/translate", json=body | {"beam_size": 1}).json()["results"][0]
    top1 = server.http.post("/v1/translate", json=body | {"sampling_topk": 1, "beam_size": 1}).json()["results"][0]
    assert top1["text"] == greedy["text"]
    r = server.http.post("/v1/translate", json=body | {"sampling_topk": 20, "sampling_temperature": 1.5, "num_hypotheses": 4})
    assert r.status_code == 200, r.text
    hyps = r.json()["results"][0]["hypotheses"]
    assert len(hyps) == 4 and [h["score"] for h in hyps] == sorted((h["score"] for h in hyps), reverse=True)
    assert len({h["text"] for h in hyps}) > 1


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"sampling_topk": 5, "beam_size": 4}, "needs beam_size 1"),
        ({"sampling_topk": -1}, "sampling_topk"),
        ({"sampling_temperature": 0}, "sampling_temperature"),
        ({"repetition_penalty": 0}, "repetition_penalty"),
        ({"no_repeat_ngram_size": -1}, "no_repeat_ngram_size"),
        ({"min_length": 300}, "below max_length 256"),
        ({"target_prefix": ""}, "target_prefix"),
        ({"target_prefix": "Le", "text": "One. Two."}, "one sentence"),
        ({"sampling_topk": 3, "num_hypotheses": 9}, "RENDITION_MAX_BEAM_SIZE"),
    ],
)
def test_decoding_options_are_validated(server, options, needle):
    r = server.http.post("/v1/translate", json={"text": SRC, "source": "en", "target": "fr"} | options)
    assert r.status_code == 422 and needle in r.text, r.text


def test_a_long_list_written_twice_is_translated_not_refused(server) -> None:
    """One long sentence: a bullet list of tool names, written twice (the README's case).  Its
    translation fits the 2.0 x source + 10 cap, or a repetition loop gets the no-repeat second
    decoding; either way a 200 with the text whole."""
    tools = "grep, sed, awk, find, xargs, tar, gzip, curl, wget, rsync, ssh, git, make, gcc, gdb, vim, nano, less, top, ps"
    bullets = " ".join(f"* {t}" for t in tools.split(", "))
    text = f"The image ships these tools: {bullets} {bullets}"
    r = server.http.post("/v1/translate", json={"text": text, "source": "en", "target": "fr"}, timeout=300)
    assert r.status_code == 200, r.text
    result = r.json()["results"][0]
    assert "truncated" not in result and len(result["text"]) > len(text) / 2


def test_a_repetition_loop_is_ended_by_the_second_decoding(server, shipped) -> None:
    """A real loop of the shipped translator: forty "!" run to the length limit with the route's
    options (checked in process), and the service's second decoding without repeated 4-grams ends
    them: a 200 with the text, counted as an ended fallback."""
    from dataclasses import replace

    from rendition.model.tokenizer import EOS_ID
    from rendition.model.translation.search import max_output_lengths

    text = " ".join(["!"] * 40)
    ids = [shipped.tokenizer.lang_id("fr"), *shipped.tokenizer.encode([text])[0], EOS_ID]
    opts = TranslationOptions(beam_size=2, max_length=256)
    cap = max_output_lengths([len(ids)], opts)[0]
    assert len(shipped.core([ids], opts)[0][0].tokens) + 1 == cap  # no </s> before the limit: a loop
    assert len(shipped.core([ids], replace(opts, no_repeat_ngram_size=4))[0][0].tokens) + 1 < cap
    before = server.sample("rendition_length_fallbacks", "_total", outcome="ended")
    r = server.http.post("/v1/translate", json={"text": text, "source": "en", "target": "fr"}, timeout=120)
    assert r.status_code == 200, r.text
    result = r.json()["results"][0]
    assert "truncated" not in result and "!" in result["text"]
    assert server.sample("rendition_length_fallbacks", "_total", outcome="ended") == before + 1
