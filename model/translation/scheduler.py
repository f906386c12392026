"""The step-level scheduler: worker threads, each running continuous beam searches, fed from one
queue with a fair share per request.

    sched = TranslationScheduler(backend, workers=2, threads=1)
    ticket = sched.submit(sources, TranslationOptions(beam_size=4))   # one request's sentences
    hyps = ticket.future.result()                                     # n-best per sentence, in order
    ticket.cancel()                                                   # its beams leave at the next step
    ticket.stats                                                      # decoding steps, cache size so far
    sched.close()

Each worker owns one ``BeamSearch`` (``rendition.model.translation.search``) per set of options (the frozen
``TranslationOptions`` are the key) and steps them in turn; a worker that has had nothing to run
for ``IDLE_RELEASE_S`` drops its searches with their K/V storage (a search made anew for every
request costs its storage's first touch, about half the throughput of back-to-back requests), and a
busy worker drops any one search that has run nothing for as long (the other direction's, a second
decoding's: else each option set a worker has ever served keeps its storage while others run); a
search reserves ``max_sentences`` sentences of ``max_length`` positions of storage, uninitialised, so
only the positions written are touched and a longer sentence joining never widens (copies) the
storage: what a worker holds follows its load, not the largest burst it has seen.  Between two steps it admits waiting
sentences while it runs fewer than ``max_sentences`` and their source tokens x beam size stay
within ``max_tokens`` (a worker with nothing running takes one sentence whatever its size); a full
worker is refilled once ``max_sentences / 8`` places are free, so that under load sentences join
several at a time (one encoder pass, one cache join).  The next sentence admitted is always one of
the request with the fewest sentences running, oldest first: a one-sentence request waits for one
free place, never for a heavy request's whole batch.  A sentence's result is answered the step it
is done, and each of its sentences is reported the step it is done, with the decoding steps it took
part in (``Ticket.on_result``).

A step's work is counted in units (``step_units``): per sentence in it, its source tokens (at least
``MIN_SOURCE_TOKENS``: a step has a part that does not grow with the source, the decoder layers and
the output layer) x its rows; the observer gets them with the step's time and its wall period (since
the worker's previous step: what the worker spends per step, admissions and waits for a core included).

``workers`` x ``threads`` is CTranslate2's inter_threads x intra_threads: with one core per worker,
two single-threaded workers keep both cores busy where one two-threaded worker leaves them idle
in its serial parts (``benchmarks/bench_engine.py`` measures both).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, cast

import torch

from rendition.model.kernels import native
from rendition.model.threads import name_native_thread
from rendition.model.translation.options import SearchStats, TranslationOptions
from rendition.model.translation.search import BeamSearch, Hypothesis, Seq2Seq
from rendition.model.weights import release_freed_memory

log = logging.getLogger("rendition.scheduler")

IDLE_RELEASE_S = 1.0  # a worker with nothing to run for this long drops its searches' storage
TRIM_EVERY_S = 5.0  # a busy worker hands the heap's free pages back this often (glibc's malloc_trim)
MIN_SOURCE_TOKENS = 32  # a decoding step's work per row counts the source as at least this long


def worker_layout(workers: int = 0, threads: int = 0, cores: int = 0, device: str = "cpu") -> tuple[int, int]:
    """(workers, threads per worker); 0 means auto: on CPU one single-threaded worker per core (CTranslate2's
    best layout on the 2-core machine of ``docs/benchmarks.md``: inter_threads = cores, intra_threads = 1; ours
    measures best the same way), at most 8 workers, the cores shared out among them; on a GPU one worker."""
    cores = cores or torch.get_num_threads()
    # (With threads > 1, the thread that loads the model should do it on one thread: every thread
    # that ever ran a multi-threaded OpenMP region keeps its team of threads, and once libgomp's
    # threads outnumber the cores it stops spinning between regions. A 2-thread worker on 2 cores
    # then ran no faster than a 1-thread one; figures in docs/experiments.md.)
    if not workers:
        workers = 1 if device.startswith("cuda") else min(cores, 8)
    return workers, threads or max(1, cores // workers)


class Observer(Protocol):
    """What the scheduler reports (the service turns it into metrics)."""

    def admitted(self, queued_s: float) -> None: ...  # a sentence joins a search after waiting this long

    # a decoding step: its sentences, rows, cache size, time, work (``step_units``) and wall period (the
    # seconds since the worker's previous step ended, what ran between included; after an idle wait: ``seconds``)
    def stepped(
        self, worker: int, sentences: int, rows: int, cache_bytes: int, seconds: float, units: int, period: float
    ) -> None: ...

    def finished(self, tokens: int, compute_s: float) -> None: ...  # a sentence done: its tokens, time in a search


_RESOLVING = threading.Lock()  # a ticket's outcome and its future, made on demand from any thread


def settle(future: Any, outcome: tuple[Any, BaseException | None]) -> None:
    """``future`` (concurrent or asyncio) takes a ticket's ``outcome``: its error, else its results."""
    result, error = outcome
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


@dataclass(eq=False)
class Ticket:
    """One request's sentences in the scheduler; ``future`` resolves to their n-best lists.
    ``cancel()`` drops them (see ``TranslationScheduler.cancel``); ``stats`` counts the decoding
    steps its sentences took part in (per worker, a step counted once however many of them it
    ran) and the largest cache they ran in.  ``on_result(i, steps)``, when given, is called (on the
    worker's thread) the step sentence ``i`` is done, with the decoding steps it took part in,
    before ``future`` resolves; ``on_done(ticket)`` once the ticket is resolved (``outcome``).
    ``future`` is made when first asked for: a caller told by ``on_done`` never pays for one (a
    ``concurrent.futures.Future`` builds a ``threading.Condition``, a few percent of what the
    service's event loop spends on a one-sentence request)."""

    sources: list[list[int]]
    opts: TranslationOptions
    scheduler: TranslationScheduler | None = None
    on_done: Callable[[Ticket], None] | None = None
    outcome: tuple[list[list[Hypothesis]] | None, BaseException | None] | None = None  # (results, error) once resolved
    stats: SearchStats = field(default_factory=SearchStats)
    results: list[list[Hypothesis] | None] = field(default_factory=list)
    admitted: int = 0  # sentences handed to a worker so far (in order)
    running: int = 0  # in a search now
    remaining: int = 0  # not done yet
    cancelled: bool = False
    submitted: float = field(default_factory=time.perf_counter)
    started: list[float] = field(default_factory=list)  # per admitted sentence: when it joined
    on_result: Callable[[int, int], None] | None = None
    steps: list[int] = field(default_factory=list)  # per sentence: the decoding steps it took part in

    _future: Future | None = None

    def __post_init__(self) -> None:
        self.results = [None] * len(self.sources)
        self.steps = [0] * len(self.sources)
        self.remaining = len(self.sources)

    @property
    def future(self) -> Future:
        """Resolves to the n-best lists per sentence (or the error)."""
        with _RESOLVING:
            if self._future is None:
                self._future = Future()
                if self.outcome is not None:
                    settle(self._future, self.outcome)
            return self._future

    def done(self) -> bool:
        return self.outcome is not None

    def resolve(self, result: list[list[Hypothesis]] | None = None, error: BaseException | None = None) -> bool:
        """Settle the ticket (once: False when it already was), then its future and ``on_done``."""
        with _RESOLVING:
            if self.outcome is not None:
                return False
            self.outcome = (result, error)
            future = self._future
        if future is not None:
            settle(future, self.outcome)
        if self.on_done is not None:
            self.on_done(self)
        return True

    @property
    def waiting(self) -> int:
        return len(self.sources) - self.admitted

    def cancel(self) -> int:
        """Drop this request's sentences: those not admitted at once, running ones at their
        worker's next step; how many had not been admitted (they never ran)."""
        if self.scheduler is None:  # (nothing to run: answered when submitted)
            self.cancelled = True
            return 0
        return self.scheduler.cancel(self)


class _Worker:
    def __init__(self, index: int):
        self.index = index
        self.searches: dict[TranslationOptions, BeamSearch] = {}
        self.owned: dict[tuple[Ticket, int], BeamSearch] = {}  # sentence -> its search
        self.cost = 0  # source tokens x beams of the sentences in its searches
        self.last_end: float | None = None  # when its previous step ended (None: it has waited idle since)
        self.thread: threading.Thread | None = None
        self.trimmed = time.monotonic()  # when it last handed the heap's free pages back
        self.idle_since: dict[TranslationOptions, float] = {}  # a search with nothing to run -> since when


class TranslationScheduler:
    def __init__(
        self,
        model: Seq2Seq,
        workers: int = 1,
        threads: int = 0,
        max_sentences: int = 128,
        max_tokens: int = 16384,
        observer: Observer | None = None,
        kv_cache_dtype: torch.dtype | None = None,
        join_delay_s: float = 0.0,
        nice: int = 0,
        deliveries: Callable[[], AbstractContextManager[object]] = contextlib.nullcontext,
    ):
        """``threads``: torch and kernel threads per worker (0: the cores torch sees / workers);
        ``join_delay_s``: a testing aid, a pause whenever sentences join a worker's searches (a slow model);
        ``nice``: the workers' threads run this much nicer than the process (Linux: per thread), so that
        short work beside them (an event loop, embeddings) gets a core at once; ``deliveries``: the
        ``on_result`` and ``on_done`` calls of the sentences a decoding step finished are made inside
        one such context (the service's: one wake-up of its event loop for all of them)."""
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.model = model
        self.threads = threads or max(1, torch.get_num_threads() // workers)
        self.max_sentences, self.max_tokens = max_sentences, max_tokens
        self.refill = max(1, max_sentences // 8)  # places free before a full worker takes more sentences
        self.observer = observer
        self.kv_cache_dtype = kv_cache_dtype
        self.join_delay_s = join_delay_s
        self.nice = nice
        self._deliveries = deliveries
        self._cond = threading.Condition()
        self._waiting: list[Ticket] = []  # tickets with sentences not yet admitted, oldest first
        self._queued = 0  # their sentences not yet admitted (read by the service per request: kept, not summed)
        self._closing = False
        self._workers = [_Worker(i) for i in range(workers)]
        for w in self._workers:
            w.thread = threading.Thread(target=self._work, args=(w,), name=f"rendition-translate-{w.index}", daemon=True)
            w.thread.start()

    # -- the caller's side ------------------------------------------------------------------------
    def submit(
        self,
        sources: list[list[int]],
        opts: TranslationOptions,
        on_result: Callable[[int, int], None] | None = None,
        on_done: Callable[[Ticket], None] | None = None,
    ) -> Ticket:
        """Queue one request's sentences (token ids with the target tag and </s>); ``on_result``,
        ``on_done``: see ``Ticket``."""
        if self.kv_cache_dtype is not None and opts.kv_cache_dtype is None:
            opts = replace(opts, kv_cache_dtype=self.kv_cache_dtype)
        ticket = Ticket([list(s) for s in sources], opts, self, on_done=on_done, on_result=on_result)
        if not sources:
            ticket.resolve([])
            return ticket
        with self._cond:
            if self._closing:
                raise RuntimeError("the scheduler is closed")
            self._waiting.append(ticket)
            self._queued += len(sources)
            self._cond.notify_all()
        return ticket

    def cancel(self, ticket: Ticket) -> int:
        """Drop a request: sentences not admitted at once, running ones at their worker's next step.
        Returns how many had not been admitted (they never ran)."""
        with self._cond:
            never_ran = 0 if ticket.cancelled else ticket.waiting
            ticket.cancelled = True
            if ticket in self._waiting:
                self._queued -= ticket.waiting
                self._waiting.remove(ticket)
            self._cond.notify_all()
        return never_ran

    @property
    def waiting_sentences(self) -> int:
        return self._queued

    @property
    def running_sentences(self) -> int:
        return sum(len(w.owned) for w in self._workers)

    @property
    def workers(self) -> int:
        return len(self._workers)

    def close(self, wait: bool = True) -> None:
        """Finish everything submitted, then stop the workers."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if wait:
            for w in self._workers:
                assert w.thread is not None  # (started in __init__)
                w.thread.join()

    # -- a worker ---------------------------------------------------------------------------------
    def _share(self) -> int:
        """Under the lock: the sentences each worker may run, the running and waiting ones spread
        evenly over the workers."""
        total = sum(len(o.owned) for o in self._workers) + self._queued
        return max(1, -(-total // len(self._workers)))

    def _admit(self, w: _Worker) -> int:
        """Under the lock: move waiting sentences into w's searches while it has room and runs no
        more than its share (``_share``: else 64 requests arriving at once would all join the first
        worker to wake, up to its 128 places, while the other idles); how many."""
        n = 0
        share = self._share()
        while self._waiting:
            ticket = min(self._waiting, key=lambda t: t.running)  # the fewest sentences running, oldest first
            i = ticket.admitted
            cost = len(ticket.sources[i]) * ticket.opts.rows
            if w.owned and (len(w.owned) >= min(self.max_sentences, share) or w.cost + cost > self.max_tokens):
                return n
            if n == 0 and self.max_sentences - len(w.owned) < self.refill:
                return n  # (a full search is refilled a few sentences at a time: one encoder pass for them)
            ticket.admitted += 1
            self._queued -= 1
            ticket.running += 1
            if ticket.admitted == len(ticket.sources):
                self._waiting.remove(ticket)
            search = w.searches.get(ticket.opts)
            if search is None:
                search = w.searches[ticket.opts] = BeamSearch(
                    self.model, ticket.opts, self.max_sentences, ticket.opts.max_length, long_lived=True
                )
            search.add((ticket, i), ticket.sources[i])
            w.owned[(ticket, i)] = search
            w.cost += cost
            now = time.perf_counter()
            ticket.started.append(now)
            if self.observer:
                self.observer.admitted(now - ticket.submitted)
            n += 1
        return n

    def _drop_cancelled(self, w: _Worker) -> None:
        for sentence, search in list(w.owned.items()):
            ticket, i = sentence
            if ticket.cancelled:
                search.cancel(sentence)
                self._release(w, sentence)

    def _release(self, w: _Worker, sentence: tuple[Ticket, int]) -> None:
        ticket, i = sentence
        del w.owned[sentence]
        w.cost -= len(ticket.sources[i]) * ticket.opts.rows
        ticket.running -= 1

    def _work(self, w: _Worker) -> None:
        name_native_thread(f"translate-{w.index}")  # (what top -H, perf and py-spy show)
        torch.set_num_threads(self.threads)
        if self.nice > 0 and hasattr(os, "setpriority"):
            try:  # (on Linux a thread's own priority: this worker's alone)
                tid = threading.get_native_id()
                os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + self.nice))
            except OSError as e:
                log.warning("could not lower the worker's priority: %s", e)
        while True:
            with self._cond:
                self._drop_cancelled(w)
                joined = self._admit(w)
                while not w.owned:
                    if self._closing and not self._waiting:
                        return
                    w.last_end = None
                    if not w.searches:
                        self._cond.wait()
                    elif not self._cond.wait(IDLE_RELEASE_S):  # idle that long: its searches and their
                        w.searches.clear()  # storage go, its kernels' large buffers and the heap's
                        w.idle_since.clear()
                        native.release_scratch()  # free pages (what a worker holds follows its load,
                        release_freed_memory()  # not its largest burst)
                    self._drop_cancelled(w)
                    joined += self._admit(w)
            if joined and self.join_delay_s:
                time.sleep(self.join_delay_s)
            self._step_searches(w)  # (in a call of its own: no local of this loop keeps a search alive while it waits)
            if time.monotonic() - w.trimmed > TRIM_EVERY_S:  # (under steady load a worker is never idle:
                w.trimmed = time.monotonic()  # what the steps freed inside the heap goes back all the same)
                release_freed_memory()

    def _step_searches(self, w: _Worker) -> None:
        for search in list(w.searches.values()):
            if not search.idle:
                self._step(w, search)
        self._drop_idle_searches(w)

    def _drop_idle_searches(self, w: _Worker) -> None:
        """A search with nothing to run for ``IDLE_RELEASE_S`` while the worker runs others goes,
        with its storage (what it holds is then what the searches running lately need)."""
        now = time.monotonic()
        for key, search in list(w.searches.items()):
            if not search.idle:
                w.idle_since.pop(key, None)
            elif now - w.idle_since.setdefault(key, now) > IDLE_RELEASE_S:
                del w.searches[key], w.idle_since[key]  # (only this worker's thread adds to its searches)

    def _step(self, w: _Worker, search: BeamSearch) -> None:
        start = time.perf_counter()
        mine = [sentence for sentence, s in w.owned.items() if s is search]  # (only this thread changes w.owned)
        tickets = {t for t, _ in mine}
        units = step_units(mine)
        for t, i in mine:
            t.steps[i] += 1
        try:
            done = search.step()
        except Exception as e:  # fail the requests with sentences in this search; start it afresh
            log.exception("a decoding step failed")
            key = search.opts
            with self._cond:
                for sentence in [s for s, srch in w.owned.items() if srch is search]:
                    self._release(w, sentence)
                w.searches.pop(key, None)
                w.idle_since.pop(key, None)
            for t in tickets:
                self.cancel(t)
                t.resolve(error=e)
            return
        failed, search.failed = search.failed, []
        for sentence_key, err in failed:  # an encoder pass raised: those sentences' requests fail, nobody else's
            ticket, _ = cast("tuple[Ticket, int]", sentence_key)  # (a sentence's key: its ticket and index)
            if ticket.done():
                continue
            self.cancel(ticket)
            with self._cond:
                self._drop_cancelled(w)
            ticket.resolve(error=err)
        now = time.perf_counter()
        cache_bytes = search.cache.nbytes()
        for t in tickets:
            t.stats.decode_steps += 1
            t.stats.kv_cache_bytes = max(t.stats.kv_cache_bytes, cache_bytes)
        if self.observer:
            period = now - (start if w.last_end is None else w.last_end)
            self.observer.stepped(w.index, search.live, search.cache.batch_size, cache_bytes, now - start, units, period)
        w.last_end = now
        complete, reported = [], []
        with self._cond:
            for sentence_key, hyps in done:
                ticket, i = cast("tuple[Ticket, int]", sentence_key)
                if (ticket, i) not in w.owned:
                    continue
                self._release(w, (ticket, i))
                if ticket.cancelled:
                    continue
                ticket.results[i] = hyps
                ticket.remaining -= 1
                if ticket.on_result is not None:
                    reported.append((ticket, i))
                if self.observer:
                    self.observer.finished(len(hyps[0].tokens) + 1 if hyps else 0, now - ticket.started[i])
                if ticket.remaining == 0:
                    complete.append(ticket)
        if not reported and not complete:
            return
        with self._deliveries():
            for ticket, i in reported:
                if ticket.on_result is not None:
                    ticket.on_result(i, ticket.steps[i])
            for ticket in complete:
                ticket.resolve(cast("list[list[Hypothesis]]", ticket.results))


def step_units(sentences: list[tuple[Ticket, int]]) -> int:
    """The work of a decoding step over these sentences: source tokens (at least
    MIN_SOURCE_TOKENS) x rows, summed."""
    return sum(max(len(t.sources[i]), MIN_SOURCE_TOKENS) * t.opts.rows for t, i in sentences)
