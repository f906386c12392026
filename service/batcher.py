"""Dynamic batching for the encoder: the sentences of all waiting requests run together (TEI /
infinity style).  (The translator's queue is the step-level scheduler, ``rendition.service.translation_engine``; both
are a ``service.queues.Queue``.)

``submit`` queues a request's sentences (each with a token cost and a *key*: only sentences with
equal keys share a batch) and waits for their results, which come back in the request's own order.

A single worker task forms batches from the queue in FIFO order under three limits:

    padded tokens  max(cost) * len(batch) <= max_batch_tokens   (always at least one sentence)
    sentences      len(batch) <= max_batch_size
    wait window    a batch that is not full waits until its oldest sentence is max_wait_ms old

and runs the model in a dedicated worker thread (``run_in_executor``), so the event loop keeps
answering health checks and metrics while a batch runs (``rendition.service.app`` gives the encoder's batcher
a thread of its own).  The queue is bounded (``QueueFull`` at once, for a 429), a cancelled
``submit`` (client gone, timeout) drops its still-queued sentences, and an exception inside a batch
fails only the requests that had sentences in that batch.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from rendition.service import tracing
from rendition.service.metrics import Metrics
from rendition.service.queues import BatcherClosed, BatchFailed, QueueFull

__all__ = ["Batcher", "BatcherClosed", "BatchFailed", "QueueFull"]

log = logging.getLogger("rendition.batcher")

P = TypeVar("P")  # one sentence's payload (the encoder's: its token ids)
K = TypeVar("K", bound=Hashable)  # the batch key
R = TypeVar("R")  # one sentence's result

RunBatch = Callable[[K, list[P]], list[R]]


@dataclass(eq=False)
class _Job(Generic[R]):
    future: asyncio.Future[list[R | None]]
    results: list[R | None]
    remaining: int
    cancelled: bool = False
    progress: Callable[[int, int], None] | None = None
    trace: Any = field(default_factory=tracing.capture)  # the request's trace context (rendition.service.tracing)


@dataclass(eq=False)
class _Item(Generic[P, K, R]):
    payload: P
    cost: int  # padded-token cost of this sentence in a batch (e.g. tokens x beam size)
    tokens: int  # real input tokens (for metrics)
    key: K
    job: _Job[R]
    index: int
    enqueued: float = field(default_factory=time.perf_counter)


class Batcher(Generic[P, K, R]):
    """A ``service.queues.Queue`` of payloads ``P`` with batch key ``K`` and results ``R``."""

    def __init__(
        self,
        name: str,
        run_batch: RunBatch[K, P, R],
        *,
        max_batch_tokens: int = 8192,
        max_batch_size: int = 64,
        max_wait_ms: float = 5.0,
        max_queue: int = 1024,
        metrics: Metrics | None = None,
        delay_ms: float = 0.0,
        executor: ThreadPoolExecutor | None = None,
    ):
        """``executor``: the single-thread executor that runs the model (shared by the app's
        batchers, which then take turns; default: a thread of this batcher's own)."""
        self.name = name
        self.run_batch = run_batch
        self.max_batch_tokens = max_batch_tokens
        self.max_batch_size = max_batch_size
        self.max_wait = max_wait_ms / 1000
        self.max_queue = max_queue
        self.metrics = metrics
        self.delay = delay_ms / 1000
        self._queue: deque[_Item[P, K, R]] = deque()
        self._wakeup = asyncio.Event()
        self._own_executor = executor is None
        self._executor = executor or ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"batcher-{name}")
        self._task: asyncio.Task | None = None
        self._closing = False
        self._avg_batch_s = 0.05  # running mean of batch time, for Retry-After

    # -- public API ---------------------------------------------------------------------------------
    @property
    def queued(self) -> int:
        return len(self._queue)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"batcher-{self.name}")
            self._task.add_done_callback(self._on_exit)

    def _on_exit(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("batcher worker died", exc_info=task.exception(), extra={"model": self.name})

    async def submit(
        self,
        payloads: Sequence[P],
        costs: Sequence[int],
        key: K,
        tokens: Sequence[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
        admitted: bool = False,
    ) -> list[R]:
        """Queue the sentences of one request; return their results in order (``progress(i, 1)``
        as each is done: one model pass; ``admitted``: see ``rendition.service.queues.Queue``).

        Raises ``QueueFull`` at once when they do not fit, ``BatchFailed`` when their batch raised.
        Cancelling the awaiting task drops the sentences that have not started running."""
        if self._closing:
            raise BatcherClosed(f"the {self.name} batcher is shutting down")
        if not payloads:
            return []
        if not admitted and len(self._queue) + len(payloads) > self.max_queue:
            raise QueueFull(self.name, self.retry_after())
        job: _Job[R] = _Job(asyncio.get_running_loop().create_future(), [None] * len(payloads), len(payloads), progress=progress)
        tokens = costs if tokens is None else tokens
        now = time.perf_counter()
        for i, (p, c, t) in enumerate(zip(payloads, costs, tokens)):
            self._queue.append(_Item(p, int(c), int(t), key, job, i, now))
        self._set_depth()
        self._wakeup.set()
        try:
            return cast(list[R], await job.future)  # (complete: every slot filled)
        except asyncio.CancelledError as e:
            self._drop(job, str(e.args[0]) if e.args and e.args[0] else "cancelled")
            raise

    def retry_after(self) -> int:
        batches = math.ceil((len(self._queue) + 1) / self.max_batch_size)
        return max(1, math.ceil(batches * self._avg_batch_s))

    async def stop(self) -> None:
        """Finish everything queued or running, then stop the worker."""
        self._closing = True
        self._wakeup.set()
        if self._task is not None:
            await self._task
        if self._own_executor:
            self._executor.shutdown(wait=True)

    # -- internals ----------------------------------------------------------------------------------
    def _set_depth(self) -> None:
        if self.metrics:
            self.metrics.queue_depth.labels(self.name).set(len(self._queue))

    def _drop(self, job: _Job[R], reason: str) -> None:
        job.cancelled = True
        before = len(self._queue)
        self._queue = deque(it for it in self._queue if it.job is not job)
        dropped = before - len(self._queue)
        if dropped:
            self._set_depth()
            if self.metrics:
                self.metrics.dropped.labels(self.name, reason).inc(dropped)
            log.info("dropped queued sentences", extra={"model": self.name, "sentences": dropped, "reason": reason})

    def _select(self) -> tuple[list[_Item[P, K, R]], bool]:
        """The next batch (FIFO among sentences sharing the oldest one's key) and whether it is full."""
        key = self._queue[0].key
        batch: list[_Item[P, K, R]] = []
        widest = 0
        for item in self._queue:
            if item.key != key:
                continue
            w = max(widest, item.cost)
            if batch and (len(batch) + 1 > self.max_batch_size or w * (len(batch) + 1) > self.max_batch_tokens):
                return batch, True
            batch.append(item)
            widest = w
        return batch, len(batch) >= self.max_batch_size

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._queue:
                if self._closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            batch, full = self._select()
            deadline = self._queue[0].enqueued + self.max_wait
            now = time.perf_counter()
            if not full and not self._closing and now < deadline:
                # Wait for more work until the oldest sentence has waited max_wait (or the batch fills up).
                self._wakeup.clear()
                try:
                    await asyncio.wait_for(self._wakeup.wait(), timeout=deadline - now)
                except asyncio.TimeoutError:
                    pass
                continue  # re-select: new work may have filled the batch, or the window is over
            taken = set(map(id, batch))
            self._queue = deque(it for it in self._queue if id(it) not in taken)
            self._set_depth()
            await self._run(loop, batch)

    async def _run(self, loop: asyncio.AbstractEventLoop, batch: list[_Item[P, K, R]]) -> None:
        start = time.perf_counter()
        m = self.metrics
        if m:
            for it in batch:
                m.queue_wait.labels(self.name).observe(start - it.enqueued)
            m.batch_size.labels(self.name).observe(len(batch))
            m.batch_tokens.labels(self.name).observe(sum(it.tokens for it in batch))
            m.input_tokens.labels(self.name).inc(sum(it.tokens for it in batch))
        payloads = [it.payload for it in batch]
        try:
            results = await loop.run_in_executor(self._executor, self._call, batch[0].key, payloads)
            if len(results) != len(batch):
                raise RuntimeError(f"model returned {len(results)} results for {len(batch)} inputs")
        except Exception as e:  # fail only the requests of this batch
            log.exception("batch failed", extra={"model": self.name, "batch_size": len(batch)})
            if m:
                m.errors.labels("batch_failed").inc()
            err = BatchFailed(f"{self.name} batch of {len(batch)} sentences failed: {type(e).__name__}: {e}")
            for job in {id(it.job): it.job for it in batch}.values():
                if not job.future.done():
                    job.future.set_exception(err)
                self._drop(job, "batch_failed")
            return
        finally:
            elapsed = time.perf_counter() - start
            self._avg_batch_s = 0.8 * self._avg_batch_s + 0.2 * elapsed
            if m:
                m.batch_seconds.labels(self.name).observe(elapsed)
            tracing.record_batch(self.name, batch, start, start + elapsed)
        for it, r in zip(batch, results):
            job = it.job
            if job.future.done():
                continue  # cancelled or already failed
            job.results[it.index] = r
            job.remaining -= 1
            if job.progress is not None:
                job.progress(it.index, 1)
            if job.remaining == 0:
                job.future.set_result(job.results)

    def _call(self, key: K, payloads: list[P]) -> list[R]:
        if self.delay:
            time.sleep(self.delay)
        return self.run_batch(key, payloads)
