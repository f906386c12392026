"""``rendition serve [--host] [--port]``: run the service under uvicorn with graceful draining.

SIGTERM (or Ctrl-C): readiness turns 503 at once; after ``RENDITION_DRAIN_SECONDS`` (time for a
load balancer to notice) uvicorn stops accepting connections, lets every accepted request
finish (queued and running batches included), runs the lifespan shutdown and exits 0.  Work still
running ``RENDITION_DRAIN_DEADLINE_S`` after the signal is cancelled and answered 503 with
``Retry-After`` (counted in ``rendition_shutdown_cancelled_total``), so the process exits inside
the orchestrator's grace period.  A second
signal skips the remaining drain delay; a third forces the exit.

The signals are handled here, on the event loop, not by uvicorn: ``Server.capture_signals`` (a
public method) is a no-op, and the drain ends by setting the public ``should_exit`` /
``force_exit`` flags.  With ``RENDITION_METRICS_PORT`` a second, small uvicorn server in the same
event loop serves ``/metrics`` (``rendition.service.exposition``); it stays up until the API has drained.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Generator, Sequence

import uvicorn

from rendition.model.weights import bound_c_heap
from rendition.service import connections
from rendition.service.app import create_app
from rendition.service.deps import AppState
from rendition.service.exposition import metrics_app
from rendition.service.logs import setup_logging
from rendition.service.settings import Settings

log = logging.getLogger("rendition.main")


class Server(uvicorn.Server):
    """A uvicorn server that leaves SIGINT/SIGTERM to its caller (``Drain``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


class Drain:
    """The signal handler: first signal -> not ready, close after the drain delay; second -> close
    now (still finishing accepted requests); third -> force the exit."""

    def __init__(self, state: AppState, server: uvicorn.Server, drain_seconds: float, deadline_s: float = 20.0):
        self.state, self.server, self.drain_seconds, self.deadline_s = state, server, drain_seconds, deadline_s
        self.signals = 0

    def __call__(self, sig: signal.Signals) -> None:
        self.signals += 1
        self.state.draining = True
        if self.signals == 1:
            loop = asyncio.get_running_loop()
            loop.call_later(self.deadline_s, self.deadline)
            loop.call_later(self.deadline_s + 5, self.force)  # backstop: whatever still runs 5 s later
        if self.signals == 1 and self.drain_seconds > 0:
            log.info("draining", extra={"signal": sig.name, "drain_seconds": self.drain_seconds})
            asyncio.get_running_loop().call_later(self.drain_seconds, self.close)
        elif self.signals <= 2:
            self.close()
        else:
            self.server.force_exit = True

    def close(self) -> None:
        self.server.should_exit = True

    def deadline(self) -> None:
        """Work still running is cancelled; its requests get 503 + Retry-After (``rendition.service.inference.run_queued``)."""
        log.warning("drain deadline reached", extra={"deadline_s": self.deadline_s})
        self.state.deadline.set()
        self.close()

    def force(self) -> None:
        self.server.force_exit = True


async def serve(
    api: uvicorn.Server, metrics: uvicorn.Server | None, state: AppState, drain_seconds: float, deadline_s: float = 20.0
) -> None:
    loop = asyncio.get_running_loop()
    drain = Drain(state, api, drain_seconds, deadline_s)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, drain, sig)
    metrics_task = asyncio.create_task(metrics.serve()) if metrics is not None else None
    try:
        await api.serve()
    finally:
        if metrics is not None and metrics_task is not None:
            metrics.should_exit = True  # scrapes keep working through the whole drain
            await metrics_task
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="rendition serve",
        description="Serve translation and embeddings over HTTP (settings: RENDITION_* env vars).",
    )
    ap.add_argument("--host", default=None, help="bind address (default RENDITION_HOST or 127.0.0.1)")
    ap.add_argument("--port", type=int, default=None, help="port (default RENDITION_PORT or 8000)")
    args = ap.parse_args(list(argv) if argv is not None else None)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = Settings(**overrides)
    setup_logging(settings.log_level)
    bound_c_heap()  # (before any worker thread: glibc's arenas are capped as threads first allocate)

    failed = threading.Event()
    server: Server | None = None

    def on_load_failure() -> None:
        failed.set()
        if server is not None:
            server.should_exit = True

    app = create_app(settings, on_load_failure=on_load_failure)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        log_level=settings.log_level,
        timeout_graceful_shutdown=None,  # bounded by RENDITION_DRAIN_DEADLINE_S (Drain)
        lifespan="on",
        **connections.uvicorn_options(settings),
    )
    server = Server(config)
    metrics = None
    if settings.metrics_port is not None:
        metrics_config = uvicorn.Config(
            metrics_app(app.state.metrics.registry, settings),
            host=settings.host,
            port=settings.metrics_port,
            log_config=None,
            access_log=False,
            log_level="warning",
            lifespan="off",
        )
        metrics = Server(metrics_config)
    coroutine = serve(server, metrics, app.state.rendition, settings.drain_seconds, settings.drain_deadline_s)
    if sys.version_info >= (3, 11):  # uvicorn's event loop choice (uvloop when installed), as uvicorn.run
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(coroutine)
    else:
        asyncio.run(coroutine)
    if failed.is_set():
        sys.exit(1)


if __name__ == "__main__":
    main()
