"""Overload, disconnects, timeouts, graceful SIGTERM draining, API keys and load failures, each
against its own real server process.  ``RENDITION_BATCH_DELAY_MS`` makes every batch slow, so
the queue states these tests need are reached for sure (all waits are bounded polls)."""

from __future__ import annotations

import json
import signal
import socket
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import openai
import pytest
import torch
from libretranslatepy import LibreTranslateAPI
from openai import OpenAI

from rendition.model.embedding.encoder import SentenceEncoder
from rendition.model.translation.translator import Translator


def wait_for(cond, timeout: float = 30.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def translate(server, text, timeout: float = 60, **kw) -> httpx.Response:
    return server.http.post("/v1/translate", json={"text": text, "source": "en", "target": "fr", **kw}, timeout=timeout)


def batches_started(server) -> float:
    return server.sample("rendition_batch_size", "_count", model="translator")


@pytest.fixture(scope="module")
def slow(start_server):
    """Every batch takes >= 2 s, one sentence per batch, at most 6 sentences queued.  The test model
    (random weights) runs every sentence to its length limit: no second decoding with a repetition
    constraint, so that each sentence reaches the model once."""
    return start_server(batch_delay_ms=2000, translation_workers=1, max_queue=6, max_items=4, max_batch_size=1, max_wait_ms=0,
                        length_fallback_no_repeat_ngram=0)


def depth(server) -> float:
    return server.sample("rendition_queue_depth", model="translator")


@pytest.mark.slow
def test_overload_gets_429_with_retry_after_at_once(slow):
    n0 = batches_started(slow)
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(translate, slow, "Hello")
        wait_for(lambda: batches_started(slow) > n0, what="first batch to start")
        queued = pool.submit(translate, slow, ["one", "two", "three", "four"])
        wait_for(lambda: depth(slow) >= 3, what="queue to fill")
        # >= 3 sentences stay queued for >= 2 s, so 4 more can never fit in 6
        r = translate(slow, ["five", "six", "seven", "eight"], timeout=10)  # answered at once, inside the client timeout
        assert r.status_code == 429, r.text
        assert int(r.headers["retry-after"]) >= 1
        assert "queue is full" in r.json()["detail"]
        assert running.result().status_code == 200
        assert queued.result().status_code == 200
    assert slow.sample("rendition_errors", "_total", type="queue_full") == 1


def test_disconnected_client_work_is_dropped(slow):
    # the module's server is shared: the previous test's accepted work must be done before counting
    wait_for(lambda: depth(slow) == 0 and slow.sample("rendition_running_sentences", worker="0") == 0, what="an idle server")
    n0 = batches_started(slow)
    sentences0 = slow.sample("rendition_compute_seconds", "_count", model="translator")
    with ThreadPoolExecutor(2) as pool:
        running = pool.submit(translate, slow, "Hello")
        wait_for(lambda: batches_started(slow) > n0, what="first batch to start")
        ahead = pool.submit(translate, slow, ["World", "again"])  # queued ahead of the work to drop
        wait_for(lambda: depth(slow) >= 1, what="second request to queue")
        body = json.dumps({"text": ["dropped one", "dropped two", "dropped three"], "source": "en", "target": "fr"}).encode()
        sock = socket.create_connection(("127.0.0.1", slow.port), timeout=10)
        sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        wait_for(lambda: depth(slow) >= 4, what="sentences to queue")  # all 3 queued, behind >= 1 of `ahead`
        sock.close()  # the client goes away while its sentences wait
        wait_for(lambda: slow.sample("rendition_dropped_sentences", "_total", model="translator", reason="disconnected") == 3,
                 what="dropped sentences")
        assert running.result().status_code == 200
        assert ahead.result().status_code == 200
    assert depth(slow) == 0
    # only the surviving requests' sentences ever reached the model
    assert slow.sample("rendition_compute_seconds", "_count", model="translator") - sentences0 == 3


def test_timeout_gives_504_and_drops_queued_work(start_server):
    srv = start_server(batch_delay_ms=2000, translation_workers=1, request_timeout_s=0.5, max_batch_size=1, max_wait_ms=0)
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(translate, srv, "Hello")
        b = pool.submit(translate, srv, "World")
        ra, rb = a.result(), b.result()
    assert ra.status_code == rb.status_code == 504
    assert "RENDITION_REQUEST_TIMEOUT_S" in ra.text
    # the one still queued when it timed out had its sentence dropped, not run
    wait_for(lambda: srv.sample("rendition_dropped_sentences", "_total", model="translator", reason="timeout") == 1, what="drop")
    assert srv.http.get("/health/ready", timeout=10).status_code == 200
    srv.stop()


def test_sigterm_drains_without_losing_accepted_requests(start_server, model_dirs):
    # the first request's batch takes 2.5 s; the other five queue behind it
    srv = start_server(batch_delay_ms=2500, translation_workers=1, max_batch_size=8, max_wait_ms=0, drain_seconds=2)
    texts = [f"Sentence number {i}." for i in range(6)]
    with ThreadPoolExecutor(len(texts)) as pool:
        futures = [pool.submit(translate, srv, t) for t in texts]
        wait_for(lambda: srv.sample("rendition_requests_in_flight", route="/v1/translate") == len(texts), what="all requests accepted")
        srv.proc.send_signal(signal.SIGTERM)
        # inside the 2 s drain window the server still answers, and is not ready
        ready = wait_for(lambda: (r := srv.http.get("/health/ready", timeout=10)).status_code == 503 and r, timeout=1.5, what="503")
        assert ready.json()["status"] == "draining"
        results = [f.result() for f in futures]
    assert [r.status_code for r in results] == [200] * len(texts)
    ref = Translator.from_pretrained(model_dirs["translator"], device="cpu")
    assert [r.json()["results"][0]["text"] for r in results] == [
        ref.translate([t], "en", "fr", beam_size=2, max_length=8)[0].text for t in texts
    ]
    assert srv.proc.wait(timeout=60) == 0
    with pytest.raises(httpx.TransportError):
        srv.http.get("/health/live", timeout=5)


def test_api_keys_and_a_translator_only_server(start_server, model_dirs):
    srv = start_server(api_keys="key-one, key-two", models="translator", kv_cache_dtype="float16", compute_type="auto")
    body = {"text": "Hello", "source": "en", "target": "fr"}
    assert srv.http.post("/v1/translate", json=body).status_code == 401
    wrong = srv.http.post("/v1/translate", json=body, headers={"Authorization": "Bearer key-three"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
    assert srv.http.post("/v1/translate", json=body, headers={"Authorization": "Bearer key-two"}).status_code == 200
    assert srv.http.get("/v1/models").status_code == 401
    for open_path in ("/health/live", "/health/ready", "/metrics", "/languages", "/frontend/settings"):
        assert srv.http.get(open_path).status_code == 200, open_path
    # LibreTranslate: api_key in the (form) body
    assert isinstance(LibreTranslateAPI(srv.url, api_key="key-one").translate("Hello", "en", "fr", timeout=60), str)
    with pytest.raises(urllib.error.HTTPError) as exc:
        LibreTranslateAPI(srv.url, api_key="nope").translate("Hello", "en", "fr", timeout=60)
    assert exc.value.code == 403  # LibreTranslate answers a bad key with 403
    # OpenAI SDK: its api_key is the bearer token
    models = OpenAI(base_url=srv.url + "/v1", api_key="key-one", timeout=60, max_retries=0).models.list()
    assert [m.id for m in models.data] == ["rendition-translator"]
    assert models.data[0].model_extra["kv_cache_dtype"] == "float16"  # RENDITION_KV_CACHE_DTYPE
    ref = Translator.from_pretrained(model_dirs["translator"], device="cpu", kv_cache_dtype="float16", compute_type="auto")
    assert models.data[0].model_extra["compute_type"] == ref.compute_type  # RENDITION_COMPUTE_TYPE (default auto)
    got = srv.http.post("/v1/translate", json=body | {"beam_size": 2, "max_length": 8}, headers={"Authorization": "Bearer key-one"})
    assert got.json()["results"][0]["text"] == ref.translate(["Hello"], "en", "fr", beam_size=2, max_length=8)[0].text
    with pytest.raises(openai.AuthenticationError):
        OpenAI(base_url=srv.url + "/v1", api_key="nope", timeout=60, max_retries=0).models.list()
    # the encoder is not loaded here: a clear 404 in OpenAI's shape
    r = srv.http.post("/v1/embeddings", json={"input": "Hello"}, headers={"Authorization": "Bearer key-one"})
    assert r.status_code == 404 and "RENDITION_MODELS" in r.json()["error"]["message"]
    srv.stop()


def test_encoder_dtype_serves_the_encoder_in_bfloat16(start_server, model_dirs):
    # RENDITION_ENCODER_DTYPE; RENDITION_DTYPE stays auto, and the encoder's compute type auto keeps the dtype asked for
    srv = start_server(models="encoder", encoder_dtype="bfloat16", encoder_compute_type="auto")
    info = srv.http.get("/v1/models/rendition-disan").json()
    assert info["dtype"] == "bfloat16" and info["backend"] == "cpu-kernel-packed" and info["compute_type"] == "bfloat16"
    texts = ["A tool for converting audio files.", "Hello, how are you?", "x"]
    got = np.array([d["embedding"] for d in srv.http.post("/v1/embeddings", json={"input": texts}).json()["data"]])
    half = SentenceEncoder.from_pretrained(model_dirs["encoder"], device="cpu", dtype=torch.bfloat16).encode(texts)
    np.testing.assert_allclose(got, half, atol=1e-6)  # what the library gives in bfloat16
    full = SentenceEncoder.from_pretrained(model_dirs["encoder"], device="cpu").encode(texts)
    assert (got * full).sum(1).min() > 0.999 and not np.array_equal(got, full)
    srv.stop()


def test_invalid_setting_exits_with_a_clear_error(start_server):
    srv = start_server(wait=False, kv_cache_dtype="int8")
    assert srv.proc.wait(timeout=90) != 0
    assert "kv_cache_dtype" in srv.log()


def test_unloadable_model_exits_with_a_clear_error(start_server, tmp_path):
    srv = start_server(wait=False, translator_path=tmp_path / "missing")
    assert srv.proc.wait(timeout=90) == 1
    assert "model loading failed" in srv.log() and "missing" in srv.log()
