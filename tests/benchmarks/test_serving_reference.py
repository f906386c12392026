"""``benchmarks/bench_serving.py``'s in-process reference does the model work the service does: the
sentences its text pipeline hands the translator (spans to keep as stand-ins), and a second
decoding of each sentence cut by its length limit before the request counts as answered."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_serving  # noqa: E402

from rendition.model.text import pipeline  # noqa: E402
from rendition.model.translation.options import TranslationOptions  # noqa: E402
from rendition.model.translation.translator import Translator  # noqa: E402


@pytest.fixture(scope="module")
def translator():
    tr = Translator.from_pretrained(device="cpu", compute_type="float32")
    yield tr
    tr.close()


def test_the_service_sentences(translator) -> None:
    texts = ["Visit https://example.org/docs today. Then run make.", "Hello."]
    got = bench_serving.service_sentences(translator, texts)
    protected = [[pipeline.protect(s, pipeline.Protection(), "en").text for s in pipeline.split([t], "en", TranslationOptions())[0].sentences] for t in texts]
    assert protected[0][0] == "Visit X today."  # (the URL is a stand-in, as the service sends it)
    assert got == [translator.preprocess(p, "fr") for p in protected]


def test_a_cut_sentence_is_decoded_again_before_its_request_is_answered(translator) -> None:
    translator.start_workers(1, 1)
    scheduler = translator.scheduler
    submitted: list[TranslationOptions] = []
    real = scheduler.submit

    def spy(sources, opts, **kw):
        submitted.append(opts)
        return real(sources, opts, **kw)

    scheduler.submit = spy
    requests = bench_serving.service_sentences(translator, ["The package provides tools.", "Hello.", "Good morning."])
    short = TranslationOptions(beam_size=2, max_length=2)  # every translation reaches its limit
    bench_serving.closed_loop(scheduler, requests, lambda: short, in_flight=2)
    again = pipeline.fallback_options(short, pipeline.DEFAULT_FALLBACK_NGRAM)
    assert submitted.count(short) == 3 and submitted.count(again) == 3

    submitted.clear()
    ample = TranslationOptions(beam_size=2, max_length=256)  # nothing cut: one decoding each
    bench_serving.closed_loop(scheduler, requests, lambda: ample, in_flight=2)
    assert submitted == [ample] * 3
