"""Structured JSON logs, one object per line, carrying the request id of the request being served.

Request text is never logged (only counts, sizes and timings).  The access log (one line per
request, ``access``) skips the ``logging`` machinery once ``setup_logging`` has run: the line is
formatted directly, and the lines of ``ACCESS_FLUSH_S`` are written together (``LineWriter``), so
that the event loop makes one write (which releases the GIL and then waits to get it back from the
translation workers) per that interval rather than one per request or per loop iteration.  Any
other log record first writes the access lines waiting (the order of the lines is kept), and the
lines still waiting at exit are written then."""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import json
import logging
import sys
import time
from typing import TextIO

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "color_message",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id.get()
        if rid:
            out["request_id"] = rid
        for k, v in vars(record).items():
            if k not in _STANDARD and not k.startswith("_"):
                out[k] = v
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


class _Timestamps:
    """``ts`` of a log line, the seconds formatted once per second."""

    def __init__(self) -> None:
        self.second, self.prefix = -1, ""

    def __call__(self, now: float) -> str:
        second = int(now)
        if second != self.second:
            self.second, self.prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self.prefix}.{int((now - second) * 1000):03d}Z"


ACCESS_FLUSH_S = 0.1  # the longest an access line waits to be written (docs/benchmarks.md)


class LineWriter:
    """Lines written to ``stream`` together: ``delay_s`` after the first one waiting (0: at the end
    of the current event-loop iteration); at once with ``max_lines`` waiting, when no loop runs in
    this thread, on ``flush`` (the log handler's, before any other record) and at exit."""

    def __init__(self, stream: TextIO, delay_s: float = 0.0, max_lines: int = 256):
        self.stream = stream
        self.delay_s = delay_s
        self.max_lines = max_lines
        self.lines: list[str] = []
        self.scheduled = False
        atexit.register(self.flush)

    def write(self, line: str) -> None:
        self.lines.append(line)
        if self.scheduled:
            if len(self.lines) >= self.max_lines:
                self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # (no running loop)
            self.flush()
            return
        if self.delay_s > 0:
            loop.call_later(self.delay_s, self.flush)
        else:
            loop.call_soon(self.flush)
        self.scheduled = True

    def flush(self) -> None:
        """Write the lines waiting (from any thread: a line added meanwhile waits for the next)."""
        self.scheduled = False
        lines, self.lines = self.lines, []
        if lines:
            self.stream.write("".join(lines))
            self.stream.flush()


class _Handler(logging.StreamHandler):
    """The root handler: the access lines waiting are written before the record."""

    def emit(self, record: logging.LogRecord) -> None:
        if _access_writer is not None:
            _access_writer.flush()
        super().emit(record)


_access = logging.getLogger("rendition.access")
_access_writer: LineWriter | None = None  # set by setup_logging
_timestamp = _Timestamps()


def access(method: str, route: str, status: int, seconds: float) -> None:
    """The access-log line of one answered request (never its body): method, route template, status, duration."""
    if not _access.isEnabledFor(logging.INFO):
        return
    ms = round(seconds * 1000, 2)
    if _access_writer is None or _access.handlers or not _access.propagate:
        _access.info("request", extra={"method": method, "route": route, "status": status, "duration_ms": ms})
        return
    rid = request_id.get()
    rid_field = f', "request_id": {json.dumps(rid)}' if rid else ""
    _access_writer.write(
        f'{{"ts": "{_timestamp(time.time())}", "level": "info", "logger": "rendition.access", "msg": "request"{rid_field}, '
        f'"method": {json.dumps(method)}, "route": {json.dumps(route)}, "status": {status}, "duration_ms": {ms}}}\n'
    )


def setup_logging(level: str = "info") -> None:
    global _access_writer
    _access_writer = LineWriter(sys.stderr, ACCESS_FLUSH_S)
    handler = _Handler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        lg = logging.getLogger(name)
        lg.handlers[:] = []
        lg.propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # the service logs one access line itself
