"""Hostile input against a real server: every case gets its 4xx with a clear message, no hang
(each request has a 30 s client timeout as a hang guard), no 5xx, and the server's memory stays
bounded (RSS read from /proc before and after several rounds of the whole barrage).

Cases: huge bodies (Content-Length and chunked), deeply nested JSON, invalid UTF-8, raw control
characters, 100k-character strings, thousands of list items, 50k unknown keys, text made only of
zero-width / control characters, unpaired surrogates, NaN / Infinity / negative / huge numbers.
Text that mixes visible characters with right-to-left, zero-width or (escaped) control
characters is valid input and must be translated (200).
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

MB = 1 << 20
JSON = {"content-type": "application/json"}
TR = {"source": "en", "target": "fr"}


def dumps(obj) -> bytes:
    return json.dumps(obj).encode()


def tr(**kw) -> bytes:
    return dumps({"text": "Hello", **TR, **kw})


def raw_tr(field: str, literal: str) -> bytes:
    """A /v1/translate body with one field given as a raw JSON literal (NaN, 1e999, 999...9)."""
    return b'{"text": "Hello", "source": "en", "target": "fr", "' + field.encode() + b'": ' + literal.encode() + b"}"


def nested(depth: int) -> bytes:
    return b'{"text": ' + b"[" * depth + b'"x"' + b"]" * depth + b', "source": "en", "target": "fr"}'


# (name, path, body, content type, expected status, substrings of the message)
CASES = [
    ("huge body (Content-Length)", "/v1/translate", dumps({"text": "a" * (3 * MB), **TR}), JSON, 413, ["larger than the limit"]),
    ("huge body, OpenAI route", "/v1/embeddings", dumps({"input": ["a" * 1000] * 3000}), JSON, 413, ["larger than the limit"]),
    ("deeply nested JSON", "/v1/translate", nested(100_000), JSON, 422, ["malformed JSON body"]),
    ("deeply nested JSON (LibreTranslate)", "/translate", b'{"q": ' + b"[" * 100_000 + b"]" * 100_000 + b', "source": "en", "target": "fr"}', JSON, 400, ["invalid JSON body", "RecursionError"]),
    ("nested a little (valid JSON, wrong type)", "/v1/translate", nested(50), JSON, 422, ["text"]),
    ("invalid UTF-8", "/v1/translate", b'{"text": "caf\xc3\x28 \xff\xfe", "source": "en", "target": "fr"}', JSON, 422, ["malformed JSON body"]),
    ("invalid UTF-8 (LibreTranslate form)", "/translate", b"q=caf%C3%28&source=en&target=fr\xff", {"content-type": "application/x-www-form-urlencoded"}, 400, ["UTF-8"]),
    ("raw control characters", "/v1/translate", b'{"text": "a\x00b\x01c\x1b[31m", "source": "en", "target": "fr"}', JSON, 422, ["JSON decode error"]),
    ("only control characters (escaped)", "/v1/translate", dumps({"text": "\x00\x01\x07\x1b\x7f", **TR}), JSON, 422, ["visible characters"]),
    ("only zero-width characters", "/v1/translate", dumps({"text": "\u200b\u200c\u200d\u2060\ufeff", **TR}), JSON, 422, ["visible characters"]),
    ("only direction marks", "/v1/embeddings", dumps({"input": "\u202e\u200f\u2067\u2069"}), JSON, 422, ["visible characters"]),
    ("unpaired surrogate", "/v1/translate", b'{"text": "abc \\ud800 def", "source": "en", "target": "fr"}', JSON, 422, ["unpaired surrogate"]),
    ("unpaired surrogate (embeddings)", "/v1/embeddings", b'{"input": ["ok", "x \\udfff"]}', JSON, 422, ["input.1", "unpaired surrogate"]),
    ("100k-character string", "/v1/translate", dumps({"text": "word " * 20_000, **TR}), JSON, 422, ["100000 characters", "RENDITION_MAX_TEXT_CHARS"]),
    ("100k-character string (similarity)", "/v1/similarity", dumps({"source_sentence": "x" * 100_000, "sentences": ["y"]}), JSON, 422, ["source_sentence", "100000 characters"]),
    ("5,000 list items", "/v1/translate", dumps({"text": ["Hello"] * 5000, **TR}), JSON, 422, ["5000 items", "RENDITION_MAX_ITEMS"]),
    ("5,000 list items (embeddings)", "/v1/embeddings", dumps({"input": ["Hello"] * 5000}), JSON, 422, ["5000 items"]),
    ("50,000 unknown keys", "/v1/translate", dumps({"text": "Hello", **TR, **{f"k{i}": 1 for i in range(50_000)}}), JSON, 422, ["Extra inputs", '"k19"']),
    ("NaN length_penalty", "/v1/translate", raw_tr("length_penalty", "NaN"), JSON, 422, ["length_penalty"]),
    ("Infinity length_penalty", "/v1/translate", raw_tr("length_penalty", "Infinity"), JSON, 422, ["length_penalty"]),
    ("-Infinity length_penalty", "/v1/translate", raw_tr("length_penalty", "-Infinity"), JSON, 422, ["length_penalty"]),
    ("negative beam_size", "/v1/translate", tr(beam_size=-4), JSON, 422, ["beam_size", "greater than or equal to 1"]),
    ("huge beam_size", "/v1/translate", tr(beam_size=10**30), JSON, 422, ["beam_size"]),
    ("float beam_size 1e308", "/v1/translate", raw_tr("beam_size", "1e308"), JSON, 422, ["beam_size"]),
    ("max_length 1e999 (inf)", "/v1/translate", raw_tr("max_length", "1e999"), JSON, 422, ["max_length"]),
    ("5000-digit integer", "/v1/translate", raw_tr("max_length", "9" * 5000), JSON, 422, ["malformed JSON body"]),
    ("NaN dimensions", "/v1/embeddings", b'{"input": "Hello", "dimensions": NaN}', JSON, 422, ["dimensions"]),
    ("negative dimensions", "/v1/embeddings", dumps({"input": "Hello", "dimensions": -5}), JSON, 422, ["dimensions"]),
    ("huge dimensions", "/v1/embeddings", dumps({"input": "Hello", "dimensions": 10**12}), JSON, 422, ["dimensions"]),
    ("NaN alternatives (LibreTranslate)", "/translate", b'{"q": "Hello", "source": "en", "target": "fr", "alternatives": NaN}', JSON, 400, ["alternatives"]),
    ("huge alternatives (LibreTranslate)", "/translate", dumps({"q": "Hello", **TR, "alternatives": 10**12}), JSON, 400, ["alternatives", "RENDITION_MAX_BEAM_SIZE"]),
    ("huge num_hypotheses", "/v1/translate", tr(num_hypotheses=10**9), JSON, 422, ["num_hypotheses"]),
    ("body is a JSON array", "/v1/translate", b"[1, 2, 3]", JSON, 422, ["valid dictionary"]),
    ("empty body", "/v1/embeddings", b"", JSON, 422, ["Field required"]),
]

# valid but unusual text: translated, not rejected
VALID = [
    ("right-to-left text with an override", {"text": "\u202eHello \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627\u202c", **TR}),
    ("zero-width characters inside words", {"text": "Hel\u200blo wo\u200drld\ufeff", **TR}),
    ("escaped control characters inside text", {"text": "Hello\x00 world\x1b\x07", **TR}),
    ("combining marks and emoji", {"text": "Z\u0301a\u0308lgo \U0001F600\U0001F1EB\U0001F1F7", **TR}),
]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(max_body_bytes=1_000_000)


def send(server, path: str, body: bytes, headers: dict) -> httpx.Response:
    return server.http.post(path, content=body, headers=headers, timeout=30)  # the timeout is a hang guard


def message(r: httpx.Response) -> str:
    body = r.json()
    if isinstance(body.get("error"), dict):
        return body["error"]["message"]
    return json.dumps(body.get("error") or body.get("detail"))


@pytest.mark.parametrize("name,path,body,headers,status,needles", CASES, ids=[c[0] for c in CASES])
def test_hostile_input_gets_a_clear_4xx(server, name, path, body, headers, status, needles):
    r = send(server, path, body, headers)
    assert r.status_code == status, (name, r.status_code, r.text[:500])
    msg = message(r)
    for needle in needles:
        assert needle in msg, (name, msg[:500])
    assert len(r.content) < 20_000, "error answers stay small (at most 20 validation errors listed)"
    assert '"k20"' not in msg


def test_hostile_chunked_body_is_cut_off(server):
    def chunks():
        for _ in range(64):
            yield b"a" * (64 * 1024)  # 4 MB in total, no Content-Length

    r = server.http.post("/v1/translate", content=chunks(), headers=JSON, timeout=30)
    assert r.status_code == 413 and "RENDITION_MAX_BODY_BYTES" in r.text


@pytest.mark.parametrize("name,body", VALID, ids=[v[0] for v in VALID])
def test_unusual_but_valid_text_is_translated(server, name, body):
    r = server.http.post("/v1/translate", json=body, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["source_tokens"] > 0


def test_memory_stays_bounded_under_repeated_hostile_input(server):
    for path, body in (("/v1/translate", {"text": "warm up", **TR}), ("/v1/embeddings", {"input": "warm up"})):
        assert server.http.post(path, json=body, timeout=30).status_code == 200
    send(server, *CASES[0][1:4])
    before = rss_mb(server.proc.pid)
    rounds = 3
    for _ in range(rounds):
        for _, path, body, headers, status, _ in CASES:
            assert send(server, path, body, headers).status_code == status
    after = rss_mb(server.proc.pid)
    print(f"\nserver RSS before {before:.1f} MiB, after {rounds} x {len(CASES)} hostile requests {after:.1f} MiB")
    assert after - before < 64, (before, after)  # bodies of up to 3 MB, 100 requests: no accumulation
    assert server.http.get("/health/ready").status_code == 200
    m = server.sample("rendition_requests", "_total", status="500")
    assert m == 0
