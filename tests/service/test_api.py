"""The HTTP API against a real uvicorn process serving random models.

Answers are checked against the same models called directly in this process, one sentence at a
time; clients are the official ``openai`` SDK and ``libretranslatepy``.
"""

from __future__ import annotations

import base64
import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from libretranslatepy import LibreTranslateAPI
from openai import OpenAI

from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.translation.translator import Translator

SENTENCES = [
    "Hello world.",
    "How are you doing today, my friend?",
    "A",
    "The quick brown fox jumps over the lazy dog.",
    "Good morning",
    "Il fait beau aujourd'hui.",
    "This sentence is a little longer than the others, so it pads the batch.",
    "Yes",
]
FAMILIES = [
    "rendition_requests", "rendition_request_duration_seconds", "rendition_requests_in_flight", "rendition_queue_depth",
    "rendition_queue_wait_seconds", "rendition_batch_size", "rendition_batch_tokens", "rendition_batch_seconds",
    "rendition_generated_tokens", "rendition_decode_steps", "rendition_kv_cache_bytes", "rendition_input_tokens",
    "rendition_errors", "rendition_model_load_seconds", "rendition_build_info", "rendition_dropped_sentences",
    "rendition_compute_seconds", "rendition_running_sentences", "rendition_running_rows", "rendition_decode_step_seconds",
    "rendition_admission_unit_seconds", "rendition_admission_in_flight_seconds", "rendition_admission_output_ratio",
]


@pytest.fixture(scope="module")
def server(start_server):
    # a 50 ms window and a 50 ms pause per batch: concurrent requests always find each other
    return start_server(max_wait_ms=50, batch_delay_ms=50)


@pytest.fixture(scope="module")
def translator(model_dirs) -> Translator:
    return Translator.from_pretrained(model_dirs["translator"], device="cpu")


@pytest.fixture(scope="module")
def encoder(model_dirs) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(model_dirs["encoder"], device="cpu")


def post(server, path: str, body: dict, **kw) -> httpx.Response:
    return server.http.post(path, json=body, timeout=60, **kw)


def direct(translator: Translator, text: str, target: str = "fr", beam: int = 2, n: int = 1, max_length: int = 8):
    source = "fr" if target == "en" else "en"
    return translator.translate([text], source, target, beam_size=beam, num_hypotheses=n, max_length=max_length)[0]


# -- translation ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_requests_are_batched_and_each_gets_its_own_answers(server, translator):
    before_count = server.sample("rendition_batch_size", "_count", model="translator")
    before_single = server.sample("rendition_batch_size", "_bucket", model="translator", le="1.0")
    # 24 one-sentence requests, two decoding configurations (beam 2 and beam 3), sent at once
    jobs = [(SENTENCES[i % len(SENTENCES)], 2 + i % 2, "fr" if i % 3 else "en") for i in range(24)]

    def call(job):
        text, beam, target = job
        source = "fr" if target == "en" else "en"
        r = post(server, "/v1/translate", {"text": text, "source": source, "target": target, "beam_size": beam, "max_length": 8, "return_scores": True})
        assert r.status_code == 200, r.text
        return r.json()["results"][0]

    with ThreadPoolExecutor(len(jobs)) as pool:
        got = list(pool.map(call, jobs))
    for (text, beam, target), res in zip(jobs, got):
        ref = direct(translator, text, target, beam)
        assert res["text"] == ref.text
        assert res["score"] == pytest.approx(ref.score, abs=1e-4)
    batches = server.sample("rendition_batch_size", "_count", model="translator") - before_count
    singles = server.sample("rendition_batch_size", "_bucket", model="translator", le="1.0") - before_single
    assert batches - singles > 0  # at least one decoding step ran sentences of several requests


def test_list_input_keeps_order_and_reports_nbest_and_usage(server, translator):
    r = post(server, "/v1/translate", {"text": SENTENCES, "source": "en", "target": "fr", "beam_size": 3, "num_hypotheses": 2,
                                       "max_length": 8, "length_penalty": 0.6, "return_scores": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["model"] == "rendition-translator"
    refs = translator.translate(SENTENCES, "en", "fr", beam_size=3, num_hypotheses=2, max_length=8, length_penalty=0.6)
    assert [x["text"] for x in body["results"]] == [t.text for t in refs]
    for res, ref in zip(body["results"], refs):
        assert [h["text"] for h in res["hypotheses"]] == [h for h, _ in ref.hypotheses]
        assert [h["score"] for h in res["hypotheses"]] == pytest.approx([s for _, s in ref.hypotheses], abs=1e-4)
    assert body["usage"]["source_tokens"] == sum(len(x) for x in translator.tokenizer.encode(SENTENCES))
    assert body["usage"]["target_tokens"] == sum(len(t.tokens) for t in refs)
    # no API keys configured: any (or no) bearer token is accepted
    plain = post(server, "/v1/translate", {"text": "Hello world.", "source": "en", "target": "fr"}, headers={"Authorization": "Bearer x"}).json()
    assert set(plain["results"][0]) == {"text", "truncated"}  # no scores unless asked (random models run to max_length)
    assert plain["results"][0]["text"] == direct(translator, "Hello world.").text  # server defaults: beam 2, max_length 8


def test_libretranslate_client_and_json_batches(server, translator):
    lt = LibreTranslateAPI(server.url)
    assert lt.translate("Hello world.", "en", "fr", timeout=60) == direct(translator, "Hello world.").text
    assert lt.translate("Il fait beau aujourd'hui.", "fr", "en", timeout=60) == direct(translator, "Il fait beau aujourd'hui.", "en").text
    assert lt.languages(timeout=60) == [{"code": "en", "name": "English", "targets": ["fr"]}, {"code": "fr", "name": "French", "targets": ["en"]}]
    r = post(server, "/translate", {"q": SENTENCES[:3], "source": "en", "target": "fr", "format": "text", "alternatives": 2})
    assert r.status_code == 200, r.text
    refs = translator.translate(SENTENCES[:3], "en", "fr", beam_size=3, num_hypotheses=3, max_length=8)
    alternatives = [list(dict.fromkeys(h for h, _ in t.hypotheses[1:] if h != t.text)) for t in refs]  # no duplicates
    # (the random model runs to max_length; this server returns such cuts, marked)
    assert r.json() == {"translatedText": [t.text for t in refs], "alternatives": alternatives, "truncated": [True] * 3}


# -- embeddings ----------------------------------------------------------------------------------


def test_openai_client_float_and_base64(server, encoder):
    client = OpenAI(base_url=server.url + "/v1", api_key="unused", timeout=60, max_retries=0)
    ref = np.concatenate([encoder.encode([s]) for s in SENTENCES])  # one at a time
    default = client.embeddings.create(input=SENTENCES, model="rendition-disan")  # the SDK asks for base64
    floats = client.embeddings.create(input=SENTENCES, model="rendition-disan", encoding_format="float")
    for res in (default, floats):
        got = np.array([d.embedding for d in sorted(res.data, key=lambda d: d.index)])
        np.testing.assert_allclose(got, ref, atol=1e-5)
        assert res.model == "rendition-disan"
        assert res.usage.prompt_tokens == res.usage.total_tokens == sum(encoder.count_tokens(SENTENCES))
    small = client.embeddings.create(input="Hello world.", model="rendition-disan", dimensions=8, encoding_format="float")
    raw = encoder.encode(["Hello world."], normalize=False)[0, :8]
    np.testing.assert_allclose(small.data[0].embedding, raw / np.linalg.norm(raw), atol=1e-5)


def test_base64_is_little_endian_float32(server, encoder):
    r = post(server, "/v1/embeddings", {"input": "Good morning", "encoding_format": "base64"})
    body = r.json()
    assert body["object"] == "list" and body["data"][0]["object"] == "embedding" and body["data"][0]["index"] == 0
    vec = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(vec, encoder.encode(["Good morning"])[0], atol=1e-6)


def test_similarity_is_cosine(server, encoder):
    r = post(server, "/v1/similarity", {"source_sentence": SENTENCES[0], "sentences": SENTENCES[1:5]})
    assert r.status_code == 200, r.text
    v = encoder.encode(SENTENCES[:5])
    expected = [float(np.dot(v[0], x) / np.linalg.norm(v[0]) / np.linalg.norm(x)) for x in v[1:]]
    assert r.json()["similarities"] == pytest.approx(expected, abs=1e-5)


# -- models, metrics, logs, docs ---------------------------------------------------------------------


def test_models_endpoint_describes_what_is_loaded(server, translator, encoder):
    data = {m["task"]: m for m in server.http.get("/v1/models", timeout=10).json()["data"]}
    assert data["translation"]["parameters"] == sum(p.numel() for p in translator.model.parameters())
    assert data["translation"]["languages"] == ["en", "fr"]
    assert data["translation"]["kv_cache_dtype"] == "float32"  # the model's dtype unless RENDITION_KV_CACHE_DTYPE
    assert data["embedding"]["embedding_size"] == encoder.dim == 48
    assert data["embedding"]["parameters"] == sum(p.numel() for p in encoder.model.parameters())
    # The back end each model was given at load (float32 on CPU: the native kernels, built in CI).
    from rendition.model.kernels import native

    if native.required() or native.library() is not None:
        assert data["translation"]["backend"] == "fused-cpu" and data["embedding"]["backend"] == "cpu-kernel-packed"
    else:
        assert data["translation"]["backend"] == "torch" and data["embedding"]["backend"] == "torch"
    loaded = [json.loads(line) for line in server.log().splitlines() if '"model loaded"' in line]
    assert {(x["model"], x["backend"]) for x in loaded} == {
        ("translator", data["translation"]["backend"]),
        ("encoder", data["embedding"]["backend"]),
    }  # (the startup log says it too)
    for m in data.values():
        assert m["device"] == "cpu" and m["dtype"] == "float32"


def test_metrics_parse_and_hold_every_family(server):
    post(server, "/v1/translate", {"text": "Hello", "source": "en", "target": "fr"})
    families = server.metrics()
    missing = [f for f in FAMILIES if f not in families]
    assert not missing, missing
    assert server.sample("rendition_requests", "_total", route="/v1/translate", status="200") >= 1
    assert server.sample("rendition_generated_tokens", "_total") > 0
    assert server.sample("rendition_decode_steps", "_total") > 0
    assert server.sample("rendition_kv_cache_bytes", worker="0") > 0
    assert server.sample("rendition_compute_seconds", "_count", model="translator") >= 1
    assert server.sample("rendition_decode_step_seconds", "_count") > 0
    assert server.sample("rendition_input_tokens", "_total", model="translator") > 0
    assert server.sample("rendition_model_load_seconds", model="translator") > 0
    assert server.sample("rendition_admission_unit_seconds") > 0
    assert server.sample("rendition_admission_output_ratio", pair="en-fr") > 0  # the sentence finished was measured
    assert server.sample("rendition_admission_in_flight_seconds") == 0  # and released
    assert server.sample("rendition_requests_in_flight", route="/metrics") == 1  # this very scrape
    info = families["rendition_build_info"].samples[0]
    assert info.labels["device"] == "cpu" and info.labels["dtype"] == "float32" and info.value == 1


def test_request_id_is_echoed_and_logs_are_json_without_text(server):
    secret = "Zebra-unicorn-sentence-417"
    r = post(server, "/v1/translate", {"text": secret, "source": "en", "target": "fr"}, headers={"X-Request-ID": "req-abc-123"})
    assert r.headers["x-request-id"] == "req-abc-123"
    assert len(server.http.get("/health/live", timeout=10).headers["x-request-id"]) == 32  # generated
    log = server.log_once(lambda log: "req-abc-123" in log)
    lines = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
    mine = [x for x in lines if x.get("request_id") == "req-abc-123"]
    assert mine and mine[-1]["route"] == "/v1/translate" and mine[-1]["status"] == 200
    assert secret not in server.log()


def test_openapi_docs(server):
    assert server.http.get("/docs", timeout=10).status_code == 200
    paths = server.http.get("/openapi.json", timeout=10).json()["paths"]
    for p in ("/v1/translate", "/translate", "/languages", "/v1/embeddings", "/v1/similarity", "/v1/models", "/health/ready", "/metrics"):
        assert p in paths


# -- bad input -----------------------------------------------------------------------------------

TR = {"source": "en", "target": "fr"}


@pytest.mark.parametrize(
    ("path", "body", "status", "needle"),
    [
        ("/v1/translate", {"text": [], **TR}, 422, "empty"),
        ("/v1/translate", {"text": "  ", **TR}, 422, "empty"),
        ("/v1/translate", {"text": ["a"] * 65, **TR}, 422, "limit is 64"),
        ("/v1/translate", {"text": "a" * 4001, **TR}, 422, "limit is 4000"),
        ("/v1/translate", {"text": "a", "beam_size": 9, **TR}, 422, "between 1 and 8"),
        ("/v1/translate", {"text": "a", "beam_size": 0, **TR}, 422, "beam_size"),
        ("/v1/translate", {"text": "a", "beam_size": 2, "num_hypotheses": 3, **TR}, 422, "num_hypotheses"),
        ("/v1/translate", {"text": "a", "max_length": 513, **TR}, 422, "limit of 512"),
        ("/v1/translate", {"text": "a", "length_penalty": -1, **TR}, 422, "length_penalty"),
        ("/v1/translate", {"text": "a", "source": "en", "target": "de"}, 400, "supported: en-fr, fr-en"),
        ("/v1/translate", {"text": "a", "source": "en", "target": "en"}, 400, "supported"),
        ("/v1/translate", {"text": 5, **TR}, 422, "text"),
        ("/v1/translate", {"text": "a", "source": "en"}, 422, "target"),
        ("/v1/translate", {"text": "a", "bogus": 1, **TR}, 422, "bogus"),
        ("/translate", {"q": "", **TR}, 400, "empty"),  # LibreTranslate: 400 for bad input
        ("/translate", {"q": "a", "source": "auto", "target": "xx"}, 400, "supported"),
        ("/translate", {"q": "a", "source": "en", "target": "xx"}, 400, "supported"),
        ("/translate", {"q": "a", "format": "markdown", **TR}, 400, "html"),
        ("/translate", {"q": "a", "alternatives": 20, **TR}, 400, "alternatives"),
        ("/detect", {"q": ""}, 400, "empty"),
        ("/detect", {"text": "a"}, 400, "q"),
        ("/v1/embeddings", {"input": []}, 422, "empty"),
        ("/v1/embeddings", {"input": ["a"] * 2049}, 422, "limit is 2048"),
        ("/v1/embeddings", {"input": "a", "dimensions": 49}, 422, "dimensions"),
        ("/v1/embeddings", {"input": "a", "encoding_format": "int8"}, 422, "encoding_format"),
        ("/v1/embeddings", {"input": [[1, 2]]}, 400, "check_embedding_ctx_length=False"),
        ("/v1/embeddings", {"input": "a", "model": "text-embedding-3-small"}, 404, "does not exist"),
        ("/v1/similarity", {"source_sentence": "a", "sentences": []}, 422, "empty"),
        ("/v1/similarity", {"source_sentence": "", "sentences": ["b"]}, 422, "empty"),
    ],
)
def test_bad_input_gets_a_clear_4xx(server, path, body, status, needle):
    r = post(server, path, body)
    assert r.status_code == status, r.text
    assert needle in r.text
    err = r.json()
    if path == "/v1/embeddings":
        assert set(err["error"]) == {"message", "type", "param", "code"} and needle in err["error"]["message"]
    elif path in ("/translate", "/detect"):
        assert isinstance(err["error"], str)
    else:
        assert "detail" in err


@pytest.mark.parametrize(
    ("body", "field", "needle"),
    [
        ({"min_length": 8, "max_length": 8}, "min_length", "min_length 8 must be below max_length 8"),
        ({"sampling_topk": 2, "beam_size": 3}, "beam_size", "sampling (sampling_topk 2) needs beam_size 1, not 3"),
        ({"beam_size": 2, "num_hypotheses": 3}, "num_hypotheses", "num_hypotheses 3 is larger than beam_size 2"),
        ({"target_prefix": "word " * 40, "max_length": 8}, "target_prefix", "it must be at most 6"),
        ({"max_length": 2}, "max_length", "RENDITION_MIN_MAX_LENGTH"),
        ({"sampling_topk": 3, "num_hypotheses": 9}, "num_hypotheses", "the limit is 8 (RENDITION_MAX_BEAM_SIZE)"),
    ],
)
def test_translation_options_refused_with_a_422_naming_the_field(server, body, field, needle):
    """``TranslationOptions`` (and the deployment's limits) refuse the value; the answer is a 422
    whose message says why and whose ``detail`` names the request's field."""
    r = post(server, "/v1/translate", {"text": "a", **TR, **body})
    assert r.status_code == 422, r.text
    (detail,) = r.json()["detail"]
    assert detail["loc"] == ["body", field] and needle in detail["msg"], detail


def test_libretranslate_alternatives_beyond_the_beam_limit_are_a_400_naming_alternatives(server):
    r = post(server, "/translate", {"q": "a", **TR, "alternatives": 8})  # a beam of 9; the limit is 8
    assert r.status_code == 400
    assert r.json()["error"].startswith("alternatives: ") and "RENDITION_MAX_BEAM_SIZE" in r.json()["error"]


def test_malformed_bodies_and_size_limit(server):
    bad_json = server.http.post("/v1/translate", content=b"{not json", headers={"content-type": "application/json"}, timeout=10)
    assert bad_json.status_code == 422
    big = server.http.post("/v1/translate", content=b"x" * 1_000_001, headers={"content-type": "application/json"}, timeout=10)
    assert big.status_code == 413 and "RENDITION_MAX_BODY_BYTES" in big.text

    def chunks():
        for _ in range(20):
            yield b"y" * 100_000

    chunked = server.http.post("/v1/embeddings", content=chunks(), headers={"content-type": "application/json"}, timeout=10)
    assert chunked.status_code == 413 and "error" in chunked.json()  # OpenAI shape on this route
    form = server.http.post("/translate", data={"source": "en", "target": "fr"}, timeout=10)  # no q
    assert form.status_code == 400 and "q" in form.json()["error"]
    xml = server.http.post("/translate", content=b"<q/>", headers={"content-type": "application/xml"}, timeout=10)
    assert xml.status_code == 400 and "unsupported content type" in xml.json()["error"]
    assert server.http.get("/v1/translate", timeout=10).status_code == 405
    assert server.http.get("/nope", timeout=10).status_code == 404
