"""Property tests (hypothesis): the tokenizer round trip and the batcher's routing of results.

Tokenizer: for any text over the alphabet below, ``decode(encode(text)) == normalise(text)`` where
``normalise(text) = " ".join(NFKC(text).split())``: SentencePiece's ``nmt_nfkc`` normaliser
applies NFKC, turns every whitespace run (space, tab, newline) into one space and strips both
ends.  The alphabet is the letters, digits and punctuation the shipped SentencePiece model has
pieces for (ASCII letters and digits, most ASCII punctuation, and French lower-case accents); a
character outside the vocabulary becomes ``<unk>`` and cannot round-trip, so it is left out.

Batcher: for any set of requests (sizes, decoding keys, token costs), any batcher limits and
any interleaving of submissions and event-loop yields, with some requests cancelled, every
surviving request gets exactly its own results, in its own order; every batch holds one key and
respects the size and token limits; cancelled requests never get anyone's results.
"""

from __future__ import annotations

import asyncio
import string
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rendition.model.tokenizer import Tokenizer
from rendition.service.batcher import Batcher

SPM = Path(__file__).resolve().parents[2] / "model" / "pretrained" / "translator" / "sentencepiece.model"
TOK = Tokenizer(SPM)
_COVERED = set("".join(p for p in TOK.pieces() if not p.startswith("<")))
CANDIDATES = string.ascii_letters + string.digits + string.punctuation + "àâäçéèêëîïôöùûüÿœæ«»’"
ALPHABET = "".join(c for c in CANDIDATES if c in _COVERED) + " \t\n"


def normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def test_alphabet_is_sensible():
    # the property below is only meaningful if the alphabet is broad
    assert set(string.ascii_letters + string.digits + ".,;:!?'\"()-") <= set(ALPHABET)
    assert set("àâçéèêîôùü") <= set(ALPHABET)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_tokenizer_round_trip(text: str):
    ids = TOK.encode([text])[0]
    assert all(i > 3 for i in ids), "no special ids (and no <unk>) for text over the alphabet"
    assert TOK.decode([ids])[0] == normalise(text)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=30), min_size=1, max_size=6))
def test_tokenizer_batch_equals_one_by_one(texts: list[str]):
    assert TOK.encode(texts) == [TOK.encode([t])[0] for t in texts]


# -- batcher -------------------------------------------------------------------------------------

request_st = st.fixed_dictionaries({
    "costs": st.lists(st.integers(1, 6), min_size=0, max_size=5),  # one cost per sentence
    "key": st.sampled_from(["beam2", "beam4", None]),
    "yields_before": st.integers(0, 3),  # event-loop turns before this request is submitted
    "cancel_after": st.one_of(st.none(), st.integers(0, 4)),  # cancel after this many turns
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    requests=st.lists(request_st, min_size=1, max_size=12),
    max_batch_size=st.integers(1, 5),
    max_batch_tokens=st.integers(1, 20),
    max_wait_ms=st.sampled_from([0.0, 0.5, 2.0]),
    max_queue=st.integers(5, 64),
)
def test_batcher_routes_every_result_to_its_own_request(requests, max_batch_size, max_batch_tokens, max_wait_ms, max_queue):
    batches: list[list[tuple]] = []
    costs_of: dict[tuple, int] = {}

    def run_batch(key, payloads):
        batches.append([(key, p) for p in payloads])
        return [("result", key, p) for p in payloads]  # a result that names its sentence

    async def scenario():
        b = Batcher("prop", run_batch, max_batch_tokens=max_batch_tokens, max_batch_size=max_batch_size,
                    max_wait_ms=max_wait_ms, max_queue=max_queue)
        b.start()

        async def client(r: int, spec: dict):
            for _ in range(spec["yields_before"]):
                await asyncio.sleep(0)
            payloads = [(r, j) for j in range(len(spec["costs"]))]
            for p, c in zip(payloads, spec["costs"]):
                costs_of[p] = c
            return await b.submit(payloads, spec["costs"], spec["key"])

        tasks = [asyncio.create_task(client(r, spec)) for r, spec in enumerate(requests)]
        for turn in range(5):
            for spec, task in zip(requests, tasks):
                if spec["cancel_after"] == turn:
                    task.cancel()
            await asyncio.sleep(0)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        await b.stop()
        return results

    results = asyncio.run(scenario())
    from rendition.service.batcher import QueueFull

    for r, (spec, res) in enumerate(zip(requests, results)):
        if isinstance(res, (asyncio.CancelledError, QueueFull)):
            continue
        assert not isinstance(res, BaseException), res
        assert res == [("result", spec["key"], (r, j)) for j in range(len(spec["costs"]))]
    ran = [p for batch in batches for _, p in batch]
    assert len(ran) == len(set(ran)), "no sentence runs twice"
    for batch in batches:
        assert len({k for k, _ in batch}) == 1, "one key per batch"
        assert len(batch) <= max_batch_size
        widest = max(costs_of[p] for _, p in batch)
        assert len(batch) == 1 or widest * len(batch) <= max_batch_tokens
    # every request that was neither cancelled nor rejected had all its sentences run
    for r, res in enumerate(results):
        if isinstance(res, list):
            assert {(r, j) for j in range(len(res))} <= set(ran)
