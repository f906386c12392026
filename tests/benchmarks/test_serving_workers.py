"""``benchmarks/bench_serving.py``'s account of the translation workers' time over a run: on a core,
waiting for one, asleep (Linux schedstat of the threads named ``translate-N``)."""

import os
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_serving  # noqa: E402

from rendition.model.threads import name_native_thread  # noqa: E402


def test_the_workers_core_seconds_add_up_to_the_run() -> None:
    before = {"11": (1.0, 0.1), "12": (2.0, 0.2), "13": (5.0, 0.0)}
    after = {"11": (2.5, 0.3), "12": (3.2, 0.3), "14": (9.0, 9.0)}  # 13 ended, 14 started: neither counts
    got = bench_serving.worker_times(before, after, seconds=2.0)
    assert got == {"on_core": 2.7, "waiting": 0.3, "asleep": 1.0}  # 2 workers x 2 s = 2.7 + 0.3 + 1.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="schedstat and thread names are Linux's")
def test_a_workers_schedstat_is_found_by_its_name() -> None:
    named, done = threading.Event(), threading.Event()

    def worker() -> None:
        name_native_thread("translate-7")
        named.set()
        t0 = time.thread_time()
        while time.thread_time() - t0 < 0.05:  # 50 ms on a core
            pass
        done.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert named.wait(10)
        time.sleep(0.2)
        stats = bench_serving.worker_schedstat(os.getpid())
        assert str(t.native_id) in stats  # (with any workers other tests left running)
        on_core, waiting = stats[str(t.native_id)]
        assert on_core >= 0.04 and waiting >= 0.0
    finally:
        done.set()
        t.join()
    assert bench_serving.worker_schedstat(-1) == {}  # (no such process)
