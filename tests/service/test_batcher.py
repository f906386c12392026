"""The dynamic batcher in-process, with fake models that record the batches they see."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rendition.service.batcher import Batcher, BatchFailed, QueueFull
from rendition.service.metrics import Metrics


class Recorder:
    """A fake model: result = payload * 10; records every batch; can block or fail on demand."""

    def __init__(self, fail_on: object = None):
        self.batches: list[tuple[object, list]] = []
        self.fail_on = fail_on
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def __call__(self, key, payloads):
        self.entered.set()
        assert self.gate.wait(10)
        self.batches.append((key, list(payloads)))
        if self.fail_on is not None and self.fail_on in payloads:
            raise RuntimeError("boom")
        return [p * 10 for p in payloads]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


def test_concurrent_requests_share_batches_and_get_their_own_results_in_order():
    async def main():
        model = Recorder()
        b = Batcher("m", model, max_batch_size=64, max_batch_tokens=10_000, max_wait_ms=50)
        b.start()
        reqs = [[i * 100 + j for j in range(3)] for i in range(6)]
        out = await asyncio.gather(*(b.submit(r, [1] * len(r), None) for r in reqs))
        await b.stop()
        return model, reqs, out

    model, reqs, out = run(main())
    assert out == [[x * 10 for x in r] for r in reqs]
    assert len(model.batches) == 1 and len(model.batches[0][1]) == 18  # all six requests in one batch


def test_limits_split_batches_fifo():
    async def main():
        model = Recorder()
        model.gate.clear()  # hold the first batch so everything else queues behind it
        b = Batcher("m", model, max_batch_size=3, max_batch_tokens=20, max_wait_ms=0)
        b.start()
        first = asyncio.ensure_future(b.submit([0], [1], None))
        while not model.entered.is_set():
            await asyncio.sleep(0.01)
        # costs: 5,5,5 fit 3 x 5 = 15 <= 20; size cap 3; then cost 8 x 2 = 16 ok; 8 x 3 = 24 > 20
        rest = asyncio.ensure_future(b.submit([1, 2, 3, 4, 5, 6], [5, 5, 5, 8, 8, 8], None))
        await asyncio.sleep(0.05)
        model.gate.set()
        await first
        res = await rest
        await b.stop()
        return model, res

    model, res = run(main())
    assert res == [10, 20, 30, 40, 50, 60]
    assert [p for _, p in model.batches] == [[0], [1, 2, 3], [4, 5], [6]]


def test_only_equal_keys_share_a_batch():
    async def main():
        model = Recorder()
        b = Batcher("m", model, max_wait_ms=50)
        b.start()
        out = await asyncio.gather(b.submit([1, 2], [1, 1], "a"), b.submit([3], [1], "b"), b.submit([4], [1], "a"))
        await b.stop()
        return model, out

    model, out = run(main())
    assert out == [[10, 20], [30], [40]]
    assert sorted((k, sorted(p)) for k, p in model.batches) == [("a", [1, 2, 4]), ("b", [3])]


def test_full_queue_rejects_at_once_and_cancel_drops_queued_work():
    async def main():
        metrics = Metrics()
        model = Recorder()
        model.gate.clear()
        b = Batcher("m", model, max_queue=4, max_wait_ms=0, metrics=metrics)
        b.start()
        running = asyncio.ensure_future(b.submit([0], [1], None))
        while not model.entered.is_set():
            await asyncio.sleep(0.01)
        queued = asyncio.ensure_future(b.submit([1, 2, 3], [1, 1, 1], None))
        await asyncio.sleep(0.01)
        with pytest.raises(QueueFull) as exc:
            await b.submit([4, 5], [1, 1], None)  # 3 + 2 > 4
        assert exc.value.retry_after >= 1
        assert b.queued == 3
        # a later part of an accepted request (a second decoding): queued whatever the queue holds
        later = asyncio.ensure_future(b.submit([4, 5], [1, 1], None, admitted=True))
        await asyncio.sleep(0.01)
        assert b.queued == 5
        queued.cancel(msg="disconnected")
        await asyncio.sleep(0.01)
        assert b.queued == 2
        model.gate.set()
        assert await running == [0]
        assert await later == [40, 50]
        await b.stop()
        dropped = metrics.registry.get_sample_value("rendition_dropped_sentences_total", {"model": "m", "reason": "disconnected"})
        return model, dropped

    model, dropped = run(main())
    assert [p for _, p in model.batches] == [[0], [4, 5]]  # the cancelled sentences never ran
    assert dropped == 3


def test_a_failing_batch_fails_only_its_requests():
    async def main():
        model = Recorder(fail_on=13)
        model.gate.clear()
        b = Batcher("m", model, max_wait_ms=0)
        b.start()
        first = asyncio.ensure_future(b.submit([1], [1], "x"))
        while not model.entered.is_set():
            await asyncio.sleep(0.01)
        bad = asyncio.ensure_future(b.submit([12, 13], [1, 1], "y"))  # one batch (key y) that raises
        good = asyncio.ensure_future(b.submit([2], [1], "x"))
        await asyncio.sleep(0.01)
        model.gate.set()
        assert await first == [10]
        with pytest.raises(BatchFailed, match="boom"):
            await bad
        assert await good == [20]
        after = await b.submit([5], [1], "y")  # the batcher keeps serving
        await b.stop()
        return after

    assert run(main()) == [50]


def test_stop_finishes_queued_work():
    async def main():
        model = Recorder()
        model.gate.clear()
        b = Batcher("m", model, max_batch_size=1, max_wait_ms=0)
        b.start()
        futs = [asyncio.ensure_future(b.submit([i], [1], None)) for i in range(4)]
        await asyncio.sleep(0.01)
        stopping = asyncio.ensure_future(b.stop())
        model.gate.set()
        await stopping
        return [f.result() for f in futs]

    assert run(main()) == [[0], [10], [20], [30]]
