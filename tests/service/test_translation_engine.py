"""The translator's queue hands the workers' results to the event loop through ``LoopMailbox``:
calls posted from other threads run on the loop, in order, several to one wake-up."""

from __future__ import annotations

import array
import asyncio
import fcntl
import os
import termios
import threading

import pytest

from rendition.service.translation_engine import LoopMailbox, held_wakeups


def pending_bytes(fd: int) -> int:
    """Bytes waiting to be read on a pipe (FIONREAD)."""
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]


def test_calls_posted_from_threads_run_on_the_loop_in_order_after_one_wake_up() -> None:
    async def main() -> tuple[list[tuple[int, int]], int, int]:
        box = LoopMailbox(asyncio.get_running_loop())
        seen: list[tuple[int, int]] = []

        def record(k: int) -> None:
            seen.append((k, threading.get_ident()))

        # (the loop is busy in this coroutine while the thread posts: nothing runs until it yields)
        poster = threading.Thread(target=lambda: [box.post(record, k) for k in range(100)])
        poster.start()
        poster.join()
        wake_ups = pending_bytes(box._read_fd)
        for _ in range(20):
            if len(seen) == 100:
                break
            await asyncio.sleep(0.01)
        box.post(record, 100)  # a later batch wakes the loop again
        await asyncio.sleep(0.05)
        box.close()
        box.post(record, 101)  # after close: dropped, no error
        return seen, wake_ups, threading.get_ident()

    seen, wake_ups, loop_thread = asyncio.run(main())
    assert wake_ups == 1
    assert [k for k, _ in seen] == list(range(101))
    assert {t for _, t in seen} == {loop_thread}


def test_close_runs_what_was_posted_before_it() -> None:
    async def main() -> list[int]:
        box = LoopMailbox(asyncio.get_running_loop())
        seen: list[int] = []
        poster = threading.Thread(target=box.post, args=(seen.append, 7))
        poster.start()
        poster.join()
        box.close()  # (before the loop has read the wake-up)
        return seen

    assert asyncio.run(main()) == [7]


def test_a_mailbox_of_a_closed_loop_closes_without_running_anything() -> None:
    seen: list[int] = []

    async def make() -> LoopMailbox:
        return LoopMailbox(asyncio.get_running_loop())

    box = asyncio.run(make())
    box.post(seen.append, 1)  # (after its loop has ended: never delivered)
    box.close()
    box.post(seen.append, 2)
    assert seen == []
    with pytest.raises(OSError):
        os.fstat(box._read_fd)  # (its pipe is closed)


def test_calls_posted_inside_held_wakeups_wake_the_loop_once_on_the_way_out() -> None:
    """A worker delivers a decoding step's results inside ``held_wakeups``: the loop, free all the
    while, runs nothing until the context ends, then everything, in order, after one wake-up."""

    async def main() -> tuple[list[int], list[int], int, int]:
        box = LoopMailbox(asyncio.get_running_loop())
        seen: list[int] = []
        posted, leaving, before = threading.Event(), threading.Event(), []

        def worker() -> None:
            with held_wakeups():
                for k in range(5):
                    box.post(seen.append, k)
                with held_wakeups():  # (nested: the outer one wakes)
                    box.post(seen.append, 5)
                posted.set()
                leaving.wait(5)
                before.append(pending_bytes(box._read_fd))

        t = threading.Thread(target=worker)
        t.start()
        while not posted.is_set():
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # (the loop is free: a wake-up would have run the calls)
        early = list(seen)
        leaving.set()
        t.join()  # (the loop does not run until this coroutine yields: the wake-up is still unread)
        wake_ups = pending_bytes(box._read_fd)
        for _ in range(50):
            if len(seen) == 6:
                break
            await asyncio.sleep(0.01)
        box.close()
        box.wake()  # (after close: nothing written, no error)
        return early, seen, before[0], wake_ups

    early, seen, before, wake_ups = asyncio.run(main())
    assert early == [] and before == 0
    assert wake_ups == 1
    assert seen == [0, 1, 2, 3, 4, 5]
