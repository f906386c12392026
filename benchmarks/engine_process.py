"""One engine per process, for the benchmarks that compare engines (bench_translate.py, bench_engine.py).

    proc = EngineProcess(Factory, *params)   # a spawned process builds Factory(*params)
    proc("method", *args)                    # -> that object's method(*args), run in its process
    proc.close()

The parent asks for one measurement at a time, so engines never run at once and never share a
thread pool.  This module imports nothing of the project: a process that runs another checkout's
engine (``bench_engine.py --baseline``) loads that checkout's code, never this one's.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from pathlib import Path


def tempdir(prefix: str) -> Path:
    """A temporary directory, removed when the process exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _serve(factory, params: tuple, conn) -> None:
    bench = factory(*params)
    conn.send("ready")
    while (msg := conn.recv()) is not None:
        name, params = msg
        conn.send(getattr(bench, name)(*params))


class EngineProcess:
    """An engine's measurements, asked for from the parent process one at a time: the process
    builds ``factory(*params)`` and answers ``proc("method", *args)`` with ``bench.method(*args)``."""

    def __init__(self, factory, *params):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(factory, params, child), daemon=True)
        self.proc.start()
        try:
            ready = self.conn.recv()
        except EOFError:  # (it exited: its error is on stderr)
            ready = None
        if ready != "ready":
            raise RuntimeError(f"{factory.__name__}{params[:1]} benchmark process failed to start")

    def __call__(self, name: str, *params):
        time.sleep(0.3)  # let the other process's threads settle
        self.conn.send((name, params))
        return self.conn.recv()

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join()
