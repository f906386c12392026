"""The step-level scheduler (``rendition.model.translation.scheduler``): the same results as searches alone
with one or two workers, a fair share per request, cancellation, failures kept to their search."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import weakref
from collections.abc import Iterator

import pytest
from test_continuous import alone, assert_same, random_model, random_sources  # (this directory is on sys.path)

from rendition.model.translation.backends import select_backend
from rendition.model.translation.options import SearchStats, TranslationOptions
from rendition.model.translation.scheduler import TranslationScheduler, worker_layout
from rendition.model.translation.search import generate_ids


@pytest.fixture(scope="module")
def backend():
    return select_backend(random_model("kv", seed=21))


def test_on_done_is_told_once_and_the_future_is_made_when_asked_for(backend) -> None:
    sources = random_sources(5, 96, seed=4)
    opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=3)
    sched = TranslationScheduler(backend, workers=2, threads=1, max_sentences=3)
    told: list[object] = []
    try:
        ticket = sched.submit(sources, opts, on_done=told.append)
        expected = sched.submit(sources, opts).future.result(timeout=120)
        deadline = time.monotonic() + 60
        while not ticket.done():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert told == [ticket] and ticket._future is None  # (nobody asked for a future: none was made)
        got, error = ticket.outcome
        assert error is None and len(got) == len(expected)
        for g, w in zip(got, expected):  # (the two requests share steps differently: scores within float32's tolerance)
            assert_same(g, w)
        assert ticket.future.result(timeout=0) is got  # made now, already resolved
        assert not ticket.resolve(error=RuntimeError("late")) and told == [ticket]  # settled once
        empty = sched.submit([], opts, on_done=told.append)
        assert empty.done() and told[-1] is empty and empty.future.result(timeout=0) == []
    finally:
        sched.close()


def test_a_steps_results_are_delivered_inside_one_deliveries_context(backend) -> None:
    """Every ``on_result`` and ``on_done`` call of a decoding step is made inside one ``deliveries``
    context (the service wakes its event loop once per step), on the worker's thread."""
    sources = random_sources(6, 96, seed=5)
    opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=3)
    inside: dict[int, int] = {}  # thread -> the context depth now
    contexts: list[list[str]] = []  # per context entered: the calls made inside it
    outside: list[str] = []

    @contextlib.contextmanager
    def deliveries() -> Iterator[None]:
        me = threading.get_ident()
        inside[me] = inside.get(me, 0) + 1
        contexts.append([])
        try:
            yield
        finally:
            inside[me] -= 1

    def called(what: str) -> None:
        (contexts[-1] if inside.get(threading.get_ident()) else outside).append(what)

    finished_at: dict[int, int] = {}  # sentence -> its step count (all join at the first step: the step it ended)

    def result(i: int, steps: int) -> None:
        finished_at[i] = steps
        called(f"result {i}")

    sched = TranslationScheduler(backend, workers=1, threads=1, max_sentences=6, deliveries=deliveries)
    try:
        ticket = sched.submit(sources, opts, on_result=result, on_done=lambda t: called("done"))
        ticket.future.result(timeout=120)
        deadline = time.monotonic() + 60
        while not contexts or contexts[-1][-1:] != ["done"]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        sched.close()
    assert outside == []
    assert sorted(c for calls in contexts for c in calls) == sorted([f"result {i}" for i in range(6)] + ["done"])
    assert len(contexts) == len(set(finished_at.values()))  # one per step that finished sentences, however many


@pytest.mark.parametrize("workers", [1, 2])
def test_results_equal_searches_alone(backend, workers: int) -> None:
    sources = random_sources(20, 96, seed=3)
    opts = TranslationOptions(beam_size=3, max_length_a=1.0, max_length_b=3)
    sched = TranslationScheduler(backend, workers=workers, threads=1, max_sentences=6)
    try:
        tickets = [sched.submit(sources[i : i + 5], opts) for i in range(0, 20, 5)]  # four requests at once
        got = [h for t in tickets for h in t.future.result(timeout=120)]
    finally:
        sched.close()
    for src, hyps in zip(sources, got):
        assert_same(hyps, alone(backend, src, opts))


def test_sampling_and_logits_processors_run_in_the_continuous_search(backend) -> None:
    sources = random_sources(6, 96, seed=4)
    sched = TranslationScheduler(backend, workers=1, threads=1)
    try:
        for opts in (TranslationOptions(beam_size=1, sampling_topk=3, sampling_seed=1), TranslationOptions(beam_size=2, repetition_penalty=1.5)):
            got = sched.submit(sources, opts).future.result()
            want = [alone(backend, s, opts) for s in sources]
            for g, w in zip(got, want):
                assert_same(g, w)
    finally:
        sched.close()


class SlowSteps:
    """A back end whose decoding steps take at least ``pause`` seconds (so the test sees the order
    in which requests finish, not the speed of the machine)."""

    def __init__(self, backend, pause: float):
        self.backend, self.pause = backend, pause

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def decode_step(self, tokens, cache):
        time.sleep(self.pause)
        return self.backend.decode_step(tokens, cache)


def test_a_one_sentence_request_is_not_held_behind_a_heavy_one(backend) -> None:
    """64 long sentences first, 2 sentences running at a time; a one-sentence request that arrives
    after them gets the next free place (fair share), not the place after the 64."""
    heavy_src = random_sources(64, 96, seed=5)
    opts = TranslationOptions(beam_size=2, max_length=12, max_length_a=0, max_length_b=12)
    sched = TranslationScheduler(SlowSteps(backend, 0.002), workers=1, threads=1, max_sentences=2)
    try:
        heavy = sched.submit(heavy_src, opts)
        while heavy.admitted < 2:
            time.sleep(0.001)
        light = sched.submit(random_sources(1, 96, seed=6), opts)
        light.future.result(timeout=60)
        assert not heavy.future.done()
        assert heavy.remaining > 50  # the light request waited for about one sentence, not 64
        heavy.future.result(timeout=120)
    finally:
        sched.close()


def test_a_cancelled_request_leaves_at_the_next_step_and_the_next_one_runs(backend) -> None:
    opts = TranslationOptions(beam_size=4, max_length=60, max_length_a=0, max_length_b=60)
    sched = TranslationScheduler(SlowSteps(backend, 0.005), workers=1, threads=1, max_sentences=8)
    try:
        gone = sched.submit(random_sources(16, 96, seed=7), opts)
        while sched.running_sentences < 8:
            time.sleep(0.001)
        assert sched.waiting_sentences == 8
        assert gone.cancel() == 8  # the 8 not admitted never run
        assert gone.cancelled and gone.cancel() == 0  # (a second cancel drops nothing more)
        assert sched.waiting_sentences == 0
        deadline = time.monotonic() + 5
        while sched.running_sentences:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert not gone.future.done()  # (nobody waits for it)
        steps = gone.stats.decode_steps
        assert steps >= 1 and gone.stats.kv_cache_bytes > 0  # it ran, and stopped short of its 60 steps
        assert steps < 60
        src = random_sources(2, 96, seed=8)
        after = sched.submit(src, TranslationOptions(beam_size=4)).future.result()
        assert sched.waiting_sentences == 0
        for s, h in zip(src, after):
            assert_same(h, alone(backend, s, TranslationOptions(beam_size=4)))
        assert gone.stats.decode_steps == steps  # the steps after it left are not its
    finally:
        sched.close()


@pytest.mark.parametrize("opts", [TranslationOptions(beam_size=3), TranslationOptions(beam_size=1, min_length=3)])
def test_a_tickets_stats_count_the_steps_its_sentences_ran(backend, opts: TranslationOptions) -> None:
    """A request alone on one worker: its sentences all join at the first step, so its ticket counts
    the steps of one search over them, what ``generate_ids`` reports for the same sentences."""
    sources = random_sources(5, 96, seed=12)
    want = SearchStats()
    ref = generate_ids(backend, sources, opts, stats=want)
    sched = TranslationScheduler(backend, workers=1, threads=1)
    try:
        ticket = sched.submit(sources, opts)
        got = ticket.future.result(timeout=60)
    finally:
        sched.close()
    for a, b in zip(got, ref):
        assert_same(a, b)
    assert ticket.stats.decode_steps == want.decode_steps > 0
    assert ticket.stats.kv_cache_bytes > 0
    assert not ticket.cancelled


class FailOnce:
    """A back end whose first encoder pass raises."""

    def __init__(self, backend):
        self.backend, self.failed = backend, threading.Event()

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def encode(self, src):
        if not self.failed.is_set():
            self.failed.set()
            raise RuntimeError("boom")
        return self.backend.encode(src)


def test_a_failing_search_fails_its_requests_and_the_scheduler_goes_on(backend) -> None:
    sched = TranslationScheduler(FailOnce(backend), workers=1, threads=1)
    try:
        first = sched.submit(random_sources(2, 96, seed=9), TranslationOptions(beam_size=2))
        with pytest.raises(RuntimeError, match="boom"):
            first.future.result(timeout=30)
        src = random_sources(3, 96, seed=10)
        for s, h in zip(src, sched.submit(src, TranslationOptions(beam_size=2)).future.result()):
            assert_same(h, alone(backend, s, TranslationOptions(beam_size=2)))
    finally:
        sched.close()


def test_worker_layout() -> None:
    assert worker_layout(cores=2) == (2, 1)  # the layout measured best on 2 cores (docs/benchmarks.md)
    assert worker_layout(1, 0, cores=2) == (1, 2)
    assert worker_layout(cores=16) == (8, 2)
    assert worker_layout(cores=4, device="cuda") == (1, 4)
    assert worker_layout(2, 3, cores=2) == (2, 3)


class StepLog:
    """An observer recording, per worker, the most sentences it ran in one step, and every step's units."""

    def __init__(self):
        self.most: dict[int, int] = {}
        self.units: list[int] = []

    def admitted(self, queued_s: float) -> None:
        pass

    def stepped(
        self, worker: int, sentences: int, rows: int, cache_bytes: int, seconds: float, units: int, period: float
    ) -> None:
        assert period >= seconds
        self.most[worker] = max(self.most.get(worker, 0), sentences)
        self.units.append(units)

    def finished(self, tokens: int, compute_s: float) -> None:
        pass


def test_sentences_arriving_together_are_spread_over_the_workers(backend) -> None:
    """16 sentences arriving at once on two idle workers with room for 128 each: each worker takes
    its share (8), not the first to wake all of them; results as alone."""
    sources = random_sources(16, 96, seed=8)
    opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=3)
    log = StepLog()
    sched = TranslationScheduler(backend, workers=2, threads=1, max_sentences=128, observer=log)
    try:
        got = sched.submit(sources, opts).future.result()
    finally:
        sched.close()
    assert sorted(log.most) == [0, 1] and max(log.most.values()) == 8, log.most
    for src, hyps in zip(sources, got):
        assert_same(hyps, alone(backend, src, opts))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priorities are Linux's")
def test_workers_run_nicer_than_the_process(backend) -> None:
    """``nice``: each worker thread lowers its own priority (the caller's thread keeps its own)."""
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    sched = TranslationScheduler(backend, workers=2, threads=1, nice=3)
    try:
        sched.submit(random_sources(2, 96, seed=9), TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=3)).future.result()
        workers = [t for t in threading.enumerate() if t.name.startswith("rendition-translate-")]
        assert len(workers) == 2
        assert [os.getpriority(os.PRIO_PROCESS, t.native_id) for t in workers] == [min(19, own + 3)] * 2
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own
    finally:
        sched.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads name themselves through Linux's /proc")
def test_workers_are_named_for_the_operating_system(backend) -> None:
    """``top -H``, ``perf`` and py-spy show a worker as ``translate-N`` (its ``comm``), not ``python``."""
    sched = TranslationScheduler(backend, workers=2, threads=1)
    try:
        sched.submit(random_sources(2, 96, seed=9), TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=3)).future.result()
        workers = sorted((t for t in threading.enumerate() if t.name.startswith("rendition-translate-")), key=lambda t: t.name)
        comm = [open(f"/proc/self/task/{t.native_id}/comm").read().strip() for t in workers]
        assert comm == ["translate-0", "translate-1"]
    finally:
        sched.close()


def test_a_busy_worker_hands_the_heaps_free_pages_back(backend, monkeypatch) -> None:
    """Under steady load a worker is never idle long enough to drop its searches; it still calls
    ``release_freed_memory`` (glibc's malloc_trim) every ``TRIM_EVERY_S`` while it steps."""
    from rendition.model.translation import scheduler as module

    calls: list[str] = []
    real = module.release_freed_memory

    def spy() -> bool:
        calls.append(threading.current_thread().name)
        return real()

    monkeypatch.setattr(module, "TRIM_EVERY_S", 0.0)
    monkeypatch.setattr(module, "release_freed_memory", spy)
    sched = TranslationScheduler(backend, workers=1, threads=1)
    try:
        opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=8)
        sched.submit(random_sources(4, 96, seed=14), opts).future.result()
        busy = list(calls)  # (made while the request ran: several steps, a trim after each)
    finally:
        sched.close()
    assert len(busy) >= 2 and all(name.startswith("rendition-translate-") for name in busy), busy


def test_each_sentence_is_reported_the_step_it_is_done_and_steps_count_their_units(backend) -> None:
    """``on_result(i, steps)`` comes once per sentence, before the request's future resolves, with
    the decoding steps it took part in (alone in its ticket: the ticket's own step count); a step's
    units are its sentences' source tokens (at least 32) x beam."""
    long, short = random_sources(1, 96, seed=12)[0][:40], random_sources(1, 96, seed=13)[0][:9]
    opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=3)
    log, seen = StepLog(), {}
    sched = TranslationScheduler(backend, workers=1, threads=1, observer=log)
    tickets = []

    def report(i: int, steps: int) -> None:
        seen[i] = (steps, tickets[0].future.done())

    try:
        tickets.append(sched.submit([long, short], opts, on_result=report))
        tickets[0].future.result(timeout=120)
        alone = sched.submit([long], opts)
        alone.future.result(timeout=120)
    finally:
        sched.close()
    assert sorted(seen) == [0, 1] and not any(done for _, done in seen.values())
    assert seen[0][0] == tickets[0].stats.decode_steps >= seen[1][0] >= 1  # (the long one runs to the end)
    assert seen[0][0] == alone.stats.decode_steps  # the same sentence, the same search: the same steps
    assert log.units[0] == (max(len(long), 32) + max(len(short), 32)) * 2
    assert set(log.units) <= {log.units[0], max(len(long), 32) * 2, max(len(short), 32) * 2}


def _searches(sched: TranslationScheduler) -> list[weakref.ref]:
    return [weakref.ref(s) for w in sched._workers for s in w.searches.values()]


def test_no_search_outlives_an_idle_worker(backend, monkeypatch) -> None:
    """A worker idle for ``IDLE_RELEASE_S`` drops its searches, and nothing of its loop keeps one
    (and its K/V storage) alive while it waits."""
    from rendition.model.translation import scheduler as module

    monkeypatch.setattr(module, "IDLE_RELEASE_S", 0.05)
    sched = TranslationScheduler(backend, workers=1, threads=1)
    try:
        opts = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=8)
        ticket = sched.submit(random_sources(4, 96, seed=15), opts)
        while not (searches := _searches(sched)):
            time.sleep(0.001)
        ticket.future.result()
        deadline = time.monotonic() + 10
        while any(ref() is not None for ref in searches) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(ref() is None for ref in searches)
    finally:
        sched.close()


def test_a_search_idle_while_the_worker_runs_others_is_dropped(backend, monkeypatch) -> None:
    """Under steady load a worker is never idle; a search of other options (the other direction,
    a second decoding) that has had nothing to run for ``IDLE_RELEASE_S`` goes all the same."""
    from rendition.model.translation import scheduler as module

    monkeypatch.setattr(module, "IDLE_RELEASE_S", 0.02)
    sched = TranslationScheduler(backend, workers=1, threads=1)
    try:
        long = TranslationOptions(beam_size=2, min_length=400, max_length=410, max_length_a=0.0, max_length_b=410)
        running = sched.submit(random_sources(8, 96, seed=16), long)
        short = TranslationOptions(beam_size=2, max_length_a=1.0, max_length_b=4)
        sched.submit(random_sources(1, 96, seed=17), short).future.result()
        (search,) = [weakref.ref(s) for s in sched._workers[0].searches.values() if s.opts == short]
        while search() is not None and not running.future.done():
            time.sleep(0.005)
        assert search() is None and not running.future.done()
        assert len(running.future.result()) == 8
    finally:
        sched.close()
