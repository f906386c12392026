"""rendition.model.threads: the names the operating system shows for the service's threads."""

from __future__ import annotations

import sys
import threading

import pytest

from rendition.model.threads import NAME_BYTES, name_native_thread, native_thread_name


def test_a_name_is_cut_to_the_kernels_limit_without_splitting_a_character() -> None:
    assert native_thread_name("translate-0") == "translate-0"
    assert native_thread_name("a-very-long-thread-name") == "a-very-long-thr"
    cut = native_thread_name("traduction-é-ü-ö")  # (15 bytes end inside "ü")
    assert len(cut.encode()) <= NAME_BYTES and "traduction-é-ü-ö".startswith(cut) and cut.endswith("-")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads name themselves through Linux's /proc")
def test_a_thread_names_itself_and_proc_shows_it() -> None:
    ready, done = threading.Event(), threading.Event()
    result: list[bool] = []

    def run() -> None:
        result.append(name_native_thread("named-thread"))
        ready.set()
        done.wait(10)

    own = open(f"/proc/self/task/{threading.get_native_id()}/comm").read()
    t = threading.Thread(target=run)
    t.start()
    try:
        assert ready.wait(10) and result == [True]
        assert open(f"/proc/self/task/{t.native_id}/comm").read().strip() == "named-thread"
        assert open(f"/proc/self/task/{threading.get_native_id()}/comm").read() == own  # the caller's is its own
    finally:
        done.set()
        t.join()
