"""``rendition serve [--host] [--port]``: run the service under uvicorn with graceful draining.

SIGTERM (or Ctrl-C): readiness turns 503 at once; after ``RENDITION_DRAIN_SECONDS`` (time for a
load balancer to notice) uvicorn stops accepting connections, lets every accepted request
finish (queued and running batches included), runs the lifespan shutdown and exits 0.  A second
signal skips the remaining drain delay; a third Ctrl-C forces the exit.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

import uvicorn

from service.app import create_app
from service.logs import setup_logging
from service.settings import Settings

log = logging.getLogger("rendition.main")


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app_state, drain_seconds: float):
        super().__init__(config)
        self.app_state = app_state
        self.drain_seconds = drain_seconds
        self._timer: threading.Timer | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.app_state.draining or self.drain_seconds <= 0:
            self.app_state.draining = True
            super().handle_exit(sig, frame)
        else:
            self.app_state.draining = True
            log.info("draining", extra={"signal": signal.Signals(sig).name, "drain_seconds": self.drain_seconds})
            self._timer = threading.Timer(self.drain_seconds, lambda: setattr(self, "should_exit", True))
            self._timer.daemon = True
            self._timer.start()
        self._captured_signals.clear()  # a drained shutdown is a clean exit (status 0), not death by signal

    def exit_now(self) -> None:
        self.should_exit = True


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

    failed = threading.Event()
    server: DrainingServer | None = None

    def on_load_failure() -> None:
        failed.set()
        if server is not None:
            server.exit_now()

    app = create_app(settings, on_load_failure=on_load_failure)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=False,
        log_level=settings.log_level,
        timeout_graceful_shutdown=None,
        lifespan="on",
    )
    server = DrainingServer(config, app.state.rendition, settings.drain_seconds)
    server.run()
    if failed.is_set():
        sys.exit(1)


if __name__ == "__main__":
    main()
