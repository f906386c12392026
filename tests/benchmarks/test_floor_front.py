"""``benchmarks/floor_front.py``, the floor under ``bench_serving.py``'s HTTP efficiency: a real
server whose ``POST /v1/translate`` does the service's model work and nothing else.  Its answers
are the service's for what the benchmark sends, a translation cut by its length limit is decoded
a second time as the service does, and every other request reaches the service."""

import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_serving  # noqa: E402

from tests.service.conftest import server_python  # noqa: E402

PLAIN = [
    "The package provides tools for the command line.",
    "I am hungry. Where is the station?",  # two sentences, one job
]


@pytest.fixture(scope="module")
def servers():
    with (
        bench_serving.serve(bench_serving.ROOT, 0, {}, server_python()) as service,
        bench_serving.serve(bench_serving.ROOT, 0, {}, server_python(), front="floor") as floor,
    ):
        yield service, floor


def _translate(url: str, text: str, **options) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/translate", json={"text": text, "source": "en", "target": "fr", **options}, timeout=120
    )


def _input_tokens(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=30).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "rendition_input_tokens_total" and sample.labels.get("model") == "translator":
                return sample.value
    raise AssertionError("no rendition_input_tokens_total for the translator")


@pytest.mark.parametrize("text", PLAIN)
def test_the_floor_answers_what_the_service_answers(servers, text: str) -> None:
    service, floor = servers
    want = _translate(service, text)
    got = _translate(floor, text)
    assert want.status_code == got.status_code == 200
    assert got.json()["model"] == "floor"  # (the floor answered, not the service behind it)
    assert got.json()["results"][0]["text"] == want.json()["results"][0]["text"]


def test_a_cut_translation_is_decoded_again(servers) -> None:
    _, floor = servers
    text = PLAIN[0]
    before = _input_tokens(floor)
    assert _translate(floor, text).status_code == 200
    once = _input_tokens(floor) - before
    before = _input_tokens(floor)
    assert _translate(floor, text, max_length=4).status_code == 200  # (the least allowed) every hypothesis reaches it
    assert once > 0 and _input_tokens(floor) - before == 2 * once  # the sentence went to the translator twice


def test_other_requests_reach_the_service(servers) -> None:
    _, floor = servers
    assert httpx.get(f"{floor}/health/ready", timeout=30).status_code == 200
    r = httpx.post(f"{floor}/translate", json={"q": PLAIN[0], "source": "en", "target": "fr"}, timeout=120)
    assert r.status_code == 200 and r.json()["translatedText"]
    assert httpx.post(f"{floor}/v1/embeddings", json={"input": "hello"}, timeout=60).status_code == 200
