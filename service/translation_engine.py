"""The translator's queue in the service: requests go to the step-level scheduler
(``rendition.model.translation.scheduler``), whose workers run continuous beam searches; each sentence joins
a running search at the next decoding step and each request is answered the step its last
sentence is done.

``TranslationQueue`` is a ``service.queues.Queue`` (``submit``, ``queued``, ``retry_after``,
``start``, ``stop``), as the encoder's batcher is, so the facade (``rendition.service.inference``) and the
pre-body gate (``rendition.service.connections``) use either.  The queue key is the request's frozen
``TranslationOptions``, handed to the scheduler as they are.  A request that goes away
(disconnect, timeout, drain deadline) is cancelled through its ticket: its sentences not admitted
yet are dropped at once, its running beams leave at the worker's next step.  Each sentence the
search finishes is reported to the request (``submit``'s ``progress``, on the event loop), and each
decoding step's time and units to the admission's measured service rate
(``rendition.service.admission.ServiceRate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence

from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.scheduler import Ticket, TranslationScheduler, settle
from rendition.model.translation.search import Hypothesis
from rendition.service import tracing
from rendition.service.admission import ServiceRate
from rendition.service.engines import TranslationEngine
from rendition.service.metrics import Metrics
from rendition.service.queues import BatcherClosed, BatchFailed, QueueFull

log = logging.getLogger("rendition.scheduler")


class MetricsObserver:
    """The scheduler's reports as Prometheus metrics (``rendition.service.metrics``), a running mean of
    a sentence's compute time (for Retry-After) and the measured service rate (``rate``)."""

    def __init__(self, metrics: Metrics | None, model: str, rate: ServiceRate | None = None):
        self.m, self.model, self.rate = metrics, model, rate
        self.sentence_s = 0.05

    def admitted(self, queued_s: float) -> None:
        if self.m:
            self.m.queue_wait.labels(self.model).observe(queued_s)

    def stepped(
        self, worker: int, sentences: int, rows: int, cache_bytes: int, seconds: float, units: int, period: float
    ) -> None:
        if self.rate is not None:
            self.rate.step(units, period)
        if self.m:
            w = str(worker) if self.model == "translator" else f"{self.model}/{worker}"  # (another pair's scheduler)
            self.m.running_sentences.labels(w).set(sentences)
            self.m.running_rows.labels(w).set(rows)
            self.m.kv_cache_bytes.labels(w).set(cache_bytes)
            self.m.step_seconds.observe(seconds)
            self.m.batch_size.labels(self.model).observe(sentences)  # (the continuous engine's batch is a step's)
            self.m.decode_steps.inc()

    def finished(self, tokens: int, compute_s: float) -> None:
        self.sentence_s = 0.9 * self.sentence_s + 0.1 * compute_s
        if self.m:
            self.m.generated_tokens.inc(tokens)
            self.m.compute_seconds.labels(self.model).observe(compute_s)


_HELD = threading.local()  # per thread: the mailboxes whose wake-up ``held_wakeups`` holds back


@contextlib.contextmanager
def held_wakeups() -> Iterator[None]:
    """Calls posted on this thread inside wake their loops once, on the way out: a worker delivers
    everything a decoding step finished (the scheduler's ``deliveries``), and the loop wakes once
    for it, not as soon as the first call lands (then again for those posted after it ran)."""
    if getattr(_HELD, "boxes", None) is not None:  # (nested: the outer one wakes)
        yield
        return
    boxes: list[LoopMailbox] = []
    _HELD.boxes = boxes
    try:
        yield
    finally:
        _HELD.boxes = None
        for box in boxes:
            box.wake()


class LoopMailbox:
    """Calls handed from the workers' threads to the event loop, run there in batches: the first call
    posted while none is pending wakes the loop with a byte on a pipe (``os.write`` releases the GIL
    for the system call; inside ``held_wakeups``, on its way out), and the loop then runs every call
    posted so far, in order.  One wake-up serves all the sentences a step finishes;
    ``call_soon_threadsafe`` per call made the worker write with the GIL held, and the loop it woke
    often took the core from it there (docs/benchmarks.md).  After ``close`` (the loop is done with
    it) posts are dropped."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._calls: list[tuple[Callable[..., None], tuple]] = []
        self._pending = False
        self._closed = False
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        os.set_blocking(self._write_fd, False)
        loop.add_reader(self._read_fd, self.drain)

    def post(self, fn: Callable[..., None], *args: object) -> None:
        """Run ``fn(*args)`` on the loop (from any thread)."""
        with self._lock:
            if self._closed:
                return
            self._calls.append((fn, args))
            wake, self._pending = not self._pending, True
        if wake:
            held: list[LoopMailbox] | None = getattr(_HELD, "boxes", None)
            if held is None:
                self.wake()
            elif self not in held:
                held.append(self)

    def wake(self) -> None:
        """Wake the loop (from any thread) to run what was posted."""
        with self._lock:  # (``close`` closes the pipe only after marking it closed under this lock)
            if not self._closed:
                with contextlib.suppress(BlockingIOError):  # (a full pipe: the loop has a wake-up waiting)
                    os.write(self._write_fd, b"\0")

    def drain(self) -> None:
        """On the loop: run the calls posted so far."""
        with contextlib.suppress(BlockingIOError):
            os.read(self._read_fd, 4096)
        with self._lock:
            calls, self._calls, self._pending = self._calls, [], False
        for fn, args in calls:
            try:
                fn(*args)
            except Exception:
                log.exception("a call from a worker failed on the event loop")

    def close(self) -> None:
        """On the loop: run what is left, then stop listening (a closed loop: nothing runs)."""
        if not self.loop.is_closed():
            self.drain()
            self.loop.remove_reader(self._read_fd)
        with self._lock:
            self._closed = True
        os.close(self._read_fd)
        os.close(self._write_fd)


def _settle(done: asyncio.Future, ticket: Ticket) -> None:
    """``done`` (the loop's) takes the ticket's result or exception."""
    if not done.cancelled() and ticket.outcome is not None:
        settle(done, ticket.outcome)


class TranslationQueue:
    """``submit`` a request's sentences (token ids) with their ``TranslationOptions``; await the
    n-best hypotheses per sentence."""

    def __init__(
        self,
        name: str,
        engine: TranslationEngine,
        *,
        workers: int,
        threads: int,
        max_batch_tokens: int,
        max_batch_size: int,
        max_queue: int,
        metrics: Metrics | None = None,
        delay_ms: float = 0.0,
        nice: int = 0,
        rate: ServiceRate | None = None,
    ):
        """``rate``: the admission's service rate, measured on this queue's decoding steps."""
        self.name = name
        self.engine = engine
        self.max_queue = max_queue
        self.max_batch_size = max_batch_size  # sentences running per worker
        self.metrics = metrics
        self.observer = MetricsObserver(metrics, name, rate)
        if rate is not None:
            rate.workers = workers
        translator = engine.translator
        self.scheduler = TranslationScheduler(
            translator.backend, workers=workers, threads=threads, max_sentences=max_batch_size,
            max_tokens=max_batch_tokens, observer=self.observer, kv_cache_dtype=translator.kv_cache_dtype,
            nice=nice, join_delay_s=delay_ms / 1000,  # (testing aid, RENDITION_BATCH_DELAY_MS: sentences joining take this long)
            deliveries=held_wakeups,
        )  # fmt: skip
        self._closing = False
        self._mailbox: LoopMailbox | None = None  # the workers' results to the event loop (made on the first submit)
        if metrics:  # (the depth is read at each scrape; nothing to update per request)
            metrics.queue_depth.labels(name).set_function(lambda: self.queued)
            self._input_tokens = metrics.input_tokens.labels(name)

    @property
    def queued(self) -> int:
        return self.scheduler.waiting_sentences

    def retry_after(self) -> int:
        """Seconds until the queue ahead has drained, estimated from the sentences' compute times
        and the sentences running at once."""
        at_once = self.scheduler.workers * self.max_batch_size
        return max(1, math.ceil((self.queued + 1) / at_once * self.observer.sentence_s))

    def start(self) -> None:
        pass  # (the scheduler's workers start with it)

    async def stop(self) -> None:
        """Finish everything queued or running, then stop the workers."""
        self._closing = True
        await asyncio.get_running_loop().run_in_executor(None, self.scheduler.close)
        if self._mailbox is not None:
            self._mailbox.close()

    def _mailbox_on(self, loop: asyncio.AbstractEventLoop) -> LoopMailbox:
        """The mailbox of the running loop (a new one, and the old one closed, should the loop change)."""
        if self._mailbox is None or self._mailbox.loop is not loop:
            if self._mailbox is not None:
                self._mailbox.close()
            self._mailbox = LoopMailbox(loop)
        return self._mailbox

    async def submit(
        self,
        payloads: Sequence[list[int]],
        costs: Sequence[int],
        key: TranslationOptions,
        tokens: Sequence[int] | None = None,
        progress: Callable[[int, int], None] | None = None,
        admitted: bool = False,
    ) -> list[list[Hypothesis]]:
        """``progress(i, steps)`` is called on the event loop as sentence ``i`` is done, with the
        decoding steps it took part in."""
        if self._closing:
            raise BatcherClosed(f"the {self.name} queue is shutting down")
        if not payloads:
            return []
        if not admitted and self.queued + len(payloads) > self.max_queue:
            raise QueueFull(self.name, self.retry_after())
        m = self.metrics
        if m:
            self._input_tokens.inc(sum(len(p) for p in payloads) if tokens is None else sum(tokens))
        trace = tracing.capture()
        mailbox = self._mailbox_on(asyncio.get_running_loop())
        on_result = None if progress is None else functools.partial(mailbox.post, progress)
        done: asyncio.Future[list[list[Hypothesis]]] = mailbox.loop.create_future()
        ticket = self.scheduler.submit(list(payloads), key, on_result, on_done=functools.partial(mailbox.post, _settle, done))
        try:
            out = await done
        except asyncio.CancelledError as e:
            never_ran = ticket.cancel()  # (running beams leave at the next step)
            reason = str(e.args[0]) if e.args and e.args[0] else "cancelled"
            if m and never_ran:
                m.dropped.labels(self.name, reason).inc(never_ran)
            raise
        except Exception as e:
            log.exception("translation failed", extra={"model": self.name, "sentences": len(payloads)})
            if m:
                m.errors.labels("batch_failed").inc()
            raise BatchFailed(f"{self.name}: {len(payloads)} sentences failed: {type(e).__name__}: {e}") from None
        if trace is not None and ticket.started:
            n_tokens = sum(len(p) for p in payloads)
            tracing.record_request(self.name, trace, ticket.submitted, min(ticket.started), time.perf_counter(), len(payloads), n_tokens)
        return out
