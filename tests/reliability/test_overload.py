"""Overload: ``scripts/loadgen.py`` drives a real server past its capacity on loopback.

The server's capacity is pinned by ``RENDITION_BATCH_DELAY_MS`` (a 200 ms pause whenever sentences
join the one translation worker, at most 4 sentences running: at most 20 sentences/s, whatever the
speed of this machine) so the test does not depend on how fast this machine is.  First a closed
loop with three queues' worth of workers (never more than the queue holds) measures capacity;
then an open loop offers 4x that rate.  Checked (no timing assertions; the figures are printed,
``pytest -s``, as docs/reliability.md says):

* every answer is 200 or 429, no other status, no transport error;
* every 429 carries an integer ``Retry-After`` >= 1 and says the queue is full;
* every accepted (200) request got the right translation (the model called directly);
* the server kept translating during the overload (goodput > 0 while the excess was shed);
* the queue never holds more than ``RENDITION_MAX_QUEUE`` sentences, and drains to 0 afterwards.
"""

from __future__ import annotations

import asyncio

import loadgen  # noqa: E402
import pytest
from loadgen import DEFAULT_TEXTS, raw_closed_loop, run_load, summarize, translate_body

from rendition.model.translation.translator import Translator

BATCH, DELAY_MS, QUEUE = 4, 200, 16


@pytest.fixture(scope="module")
def server(start_server):
    # One worker, at most BATCH sentences running, DELAY_MS whenever sentences join it: at most BATCH
    # sentences per DELAY_MS (fewer under staggered arrivals, which join a few at a time).
    return start_server(batch_delay_ms=DELAY_MS, translation_workers=1, max_batch_size=BATCH, max_wait_ms=2, max_queue=QUEUE, max_items=4,
                        default_beam_size=1, default_max_length=4)


@pytest.fixture(scope="module")
def expected(model_dirs) -> dict[str, str]:
    tr = Translator.from_pretrained(model_dirs["translator"], device="cpu")
    return {t: tr.translate([t], "en", "fr", beam_size=1, max_length=4)[0].text for t in DEFAULT_TEXTS}


def batches(server) -> tuple[float, float]:
    return (server.sample("rendition_batch_size", "_count", model="translator"),
            server.sample("rendition_batch_size", "_sum", model="translator"))


def check_answers(result, expected) -> None:
    for rec in result.records:
        assert rec.status in (200, 429), (rec.status, rec.error)
        if rec.status == 200:
            text = translate_body(rec.index)["text"]
            assert rec.body["results"][0]["text"] == expected[text], rec.index


@pytest.mark.slow
def test_overload_sheds_with_429_and_keeps_serving_at_capacity(server, expected):
    # capacity: a closed loop that keeps the queue busy (3 x BATCH clients, fewer than the queue holds)
    at_cap = asyncio.run(run_load(server.url, concurrency=3 * BATCH, seconds=5, keep_bodies=True, timeout=30))
    cap = summarize(at_cap)
    check_answers(at_cap, expected)
    assert cap["rejected_429"] == 0 and cap["ok"] > 0

    # overload: an open loop at 4x the measured capacity
    count0, sum0 = batches(server)
    rate = 4 * cap["goodput_per_s"]
    over = asyncio.run(run_load(server.url, rate=rate, seconds=6, max_in_flight=400, keep_bodies=True, timeout=30))
    ov = summarize(over)
    count1, sum1 = batches(server)
    print(f"\nat capacity (closed loop, {3 * BATCH} workers; ceiling {BATCH / DELAY_MS * 1000:.0f}/s): {cap}\noverload (open loop, {rate:.0f}/s): {ov}")
    print(f"goodput over capacity / capacity = {ov['goodput_per_s'] / cap['goodput_per_s']:.2f}; "
          f"mean sentences per decoding step in overload = {(sum1 - sum0) / max(1, count1 - count0):.2f} of {BATCH}")
    check_answers(over, expected)
    shed = [r for r in over.records if r.status == 429]
    assert len(shed) > 0 and ov["ok"] > 0
    assert all(r.retry_after is not None and r.retry_after.isdigit() and int(r.retry_after) >= 1 for r in shed)
    assert all("queue is full" in r.error for r in shed)
    assert over.skipped == 0  # the load generator really offered every scheduled request
    assert server.sample("rendition_queue_depth", model="translator") == 0
    assert server.http.get("/health/ready").status_code == 200


def test_loadgen_is_bounded(server):
    res = asyncio.run(run_load(server.url, concurrency=4, seconds=30, max_requests=10, timeout=30))
    assert len(res.records) == 10 and all(r.status == 200 for r in res.records)
    res = asyncio.run(run_load(server.url, rate=50, seconds=1, max_requests=1000, timeout=30))
    assert 0 < len(res.records) <= 51
    # an explicit schedule (bench_serving's Poisson arrivals): one request per start time, none early
    arrivals = [0.0, 0.25, 0.5, 0.75]
    res = asyncio.run(run_load(server.url, arrivals=arrivals, seconds=30, timeout=30))
    assert [r.status for r in res.records] == [200] * 4
    assert all(r.start >= t for r, t in zip(res.records, arrivals)), [r.start for r in res.records]


def test_the_lean_client_answers_as_httpx_does(server):
    """``raw_closed_loop`` (bench_serving's client) over keep-alive connections: every request
    answered once, 2xx and 4xx recorded with their statuses, as httpx's closed loop records them."""
    def body(i: int) -> dict:
        return translate_body(i) if i % 5 else {"text": "x", "source": "en", "target": "xx"}  # (an unknown language: 4xx)

    raw = asyncio.run(raw_closed_loop(server.url, body=body, concurrency=3, max_requests=12, timeout=30))
    ref = asyncio.run(run_load(server.url, body=body, concurrency=3, max_requests=12, seconds=30, timeout=30))
    assert [r.index for r in raw.records] == list(range(12))
    assert [r.status for r in raw.records] == [r.status for r in ref.records]
    assert all(400 <= r.status < 500 for r in raw.records if r.index % 5 == 0)
    assert all(r.status == 200 for r in raw.records if r.index % 5)
    assert all(r.error for r in raw.records if r.status >= 400)
    on_uvloop = loadgen.run(raw_closed_loop(server.url, body=body, concurrency=3, max_requests=12, timeout=30))  # (as bench_serving runs it)
    assert [r.status for r in on_uvloop.records] == [r.status for r in ref.records]
