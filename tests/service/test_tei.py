"""text-embeddings-inference clients against a real server: ``huggingface_hub.InferenceClient``
(``feature_extraction`` and ``sentence_similarity`` on the base URL, as RAG stacks configure it)
and raw TEI-shaped requests for ``/embed``, ``/similarity``, ``/rerank``, ``/tokenize``, ``/decode``,
``/info``, ``/health`` and TEI's error body.  Vectors are checked against the same encoder called
directly in this process."""

from __future__ import annotations

import numpy as np
import pytest
from huggingface_hub import InferenceClient
from huggingface_hub.errors import HfHubHTTPError

from rendition.model.embedding.encoder import SentenceEncoder

TEXTS = ["A tool for converting audio files.", "Outil de conversion de fichiers audio.", "Library for parsing XML."]
LONG = " ".join(["word"] * 100)  # over the random encoder's 64 tokens


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(models="encoder")


@pytest.fixture(scope="module")
def encoder(model_dirs) -> SentenceEncoder:
    return SentenceEncoder.from_pretrained(model_dirs["encoder"], device="cpu")


def test_inference_client_feature_extraction_and_similarity(server, encoder):
    client = InferenceClient(base_url=server.url, timeout=60)
    got = client.feature_extraction(TEXTS[0])
    assert got.shape == (1, encoder.dim)
    np.testing.assert_allclose(got[0], encoder.encode(TEXTS[:1])[0], atol=1e-5)
    raw = client.feature_extraction(TEXTS[1], normalize=False)
    np.testing.assert_allclose(raw[0], encoder.encode(TEXTS[1:2], normalize=False)[0], atol=1e-4)
    sims = client.sentence_similarity(TEXTS[0], other_sentences=TEXTS[1:])
    ref = encoder.encode(TEXTS)
    np.testing.assert_allclose(sims, ref[1:] @ ref[0], atol=1e-5)
    with pytest.raises(HfHubHTTPError) as e:
        client.feature_extraction(LONG)
    assert e.value.response.status_code == 413
    cut = client.feature_extraction(LONG, truncate=True)
    np.testing.assert_allclose(cut[0], encoder.encode([" ".join(["word"] * 64)])[0], atol=1e-5)


def test_embed_similarity_rerank_routes(server, encoder):
    http = server.http
    ref = encoder.encode(TEXTS)
    r = http.post("/embed", json={"inputs": TEXTS, "normalize": True})
    assert r.status_code == 200, r.text
    np.testing.assert_allclose(np.array(r.json()), ref, atol=1e-5)
    small = http.post("/embed", json={"inputs": "x", "dimensions": 8, "normalize": False}).json()
    assert len(small) == 1 and len(small[0]) == 8
    r = http.post("/similarity", json={"inputs": {"source_sentence": TEXTS[0], "sentences": TEXTS[1:]}})
    np.testing.assert_allclose(r.json(), ref[1:] @ ref[0], atol=1e-5)
    r = http.post("/rerank", json={"query": TEXTS[0], "texts": TEXTS[1:], "return_text": True})
    assert r.status_code == 200, r.text
    ranked = r.json()
    cos = ref[1:] @ ref[0]
    order = sorted(range(2), key=lambda i: -cos[i])
    assert [x["index"] for x in ranked] == order and [x["text"] for x in ranked] == [TEXTS[1 + i] for i in order]
    np.testing.assert_allclose([x["score"] for x in ranked], [(1 + cos[i]) / 2 for i in order], atol=1e-5)
    raw = http.post("/rerank", json={"query": TEXTS[0], "texts": TEXTS[1:], "raw_scores": True}).json()
    np.testing.assert_allclose([x["score"] for x in raw], [cos[i] for i in order], atol=1e-5)
    assert "text" not in raw[0]
    # left truncation keeps the end of the text
    left = http.post("/embed", json={"inputs": "first " + LONG, "truncate": True, "truncation_direction": "Left"})
    np.testing.assert_allclose(left.json()[0], encoder.encode([" ".join(["word"] * 64)])[0], atol=1e-5)


def test_tokenize_decode_and_token_id_input(server, encoder):
    text = "Outil de conversion, déjà prêt. 漢字"
    r = server.http.post("/tokenize", json={"inputs": [text]})
    assert r.status_code == 200, r.text
    tokens = r.json()[0]
    assert [t["id"] for t in tokens] == encoder.tokenizer.encode([text])[0]
    for t in tokens:
        assert set(t) == {"id", "text", "special", "start", "stop"} and t["special"] is False
        assert text[t["start"] : t["stop"]] == t["text"]
    assert "".join(t["text"] for t in tokens) == text  # the spans tile the text, byte pieces included
    assert tokens[-1]["text"].endswith("字")
    ids = [t["id"] for t in tokens]
    assert server.http.post("/decode", json={"ids": ids}).json() == [text]
    by_ids = server.http.post("/embed", json={"inputs": [ids]}).json()
    np.testing.assert_allclose(by_ids[0], encoder.encode([text])[0], atol=1e-5)


def test_info_health_and_tei_errors(server, encoder):
    info = server.http.get("/info").json()
    assert info["model_id"] == "rendition-disan" and info["max_input_length"] == encoder.max_length == 64
    assert info["max_client_batch_size"] == 2048 and "embedding" in info["model_type"]
    health = server.http.get("/health")
    assert health.status_code == 200 and health.content == b""
    r = server.http.post("/embed", json={"inputs": ["ok", LONG]})
    assert r.status_code == 413 and r.json() == {
        "error": "inputs[1] is 100 tokens long; the encoder reads at most 64 tokens (send truncate=true to cut it)",
        "error_type": "Validation",
    }
    for body, status, needle in (
        ({"inputs": []}, 422, "empty"),
        ({"inputs": [[1, 99999]]}, 422, "not in the vocabulary"),
        ({"inputs": "x", "prompt_name": "query"}, 422, "no prompts"),
        ({"inputs": "x", "dimensions": 4096}, 422, "dimensions"),
        ({"text": "x"}, 422, "inputs"),
    ):
        r = server.http.post("/embed", json=body)
        assert r.status_code == status and needle in r.json()["error"] and r.json()["error_type"] == "Validation", r.text
