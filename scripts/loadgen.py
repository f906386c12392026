"""A small, bounded HTTP load generator for the service (closed loop or open loop, loopback).

Two classic ways to load a server (see e.g. Schroeder et al., "Open versus closed: a cautionary
tale", NSDI 2006):

* closed loop (``--concurrency N``): N workers, each sends its next request when the last one is
  answered; the offered load adapts to the server, so this measures *capacity*;
* open loop (``--rate R``): requests start on a fixed schedule of R per second whatever the
  server does (up to ``--max-in-flight`` at once); above capacity this *overloads* the server,
  which must shed the excess (429) and keep serving the rest.  ``run_load(arrivals=...)`` takes
  any schedule instead (e.g. a Poisson process: ``benchmarks/bench_serving.py``).

Everything is bounded: ``--seconds`` and ``--max-requests`` (whichever comes first), per-request
timeout, in-flight cap.  Usable from tests: ``asyncio.run(run_load(...))`` returns every
request's record; ``summarize`` turns them into the figures printed below.

    python scripts/loadgen.py --url http://127.0.0.1:8000 --concurrency 8 --seconds 10
    python scripts/loadgen.py --url http://127.0.0.1:8000 --rate 400 --seconds 10 --json out.json
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

DEFAULT_TEXTS = [
    "Hello world.",
    "How are you today?",
    "The weather is nice.",
    "I would like a cup of coffee, please.",
    "Where is the train station?",
    "This is a test of the translation service.",
]


def translate_body(i: int) -> dict:
    """The i-th request of the default workload: one short sentence, en -> fr."""
    return {"text": DEFAULT_TEXTS[i % len(DEFAULT_TEXTS)], "source": "en", "target": "fr"}


@dataclass
class Record:
    index: int
    start: float  # seconds since the run started
    latency: float  # seconds (for errors: until the error)
    status: int  # HTTP status; 0 for a transport error (refused, reset, timeout)
    retry_after: str | None = None
    error: str | None = None
    body: Any = None  # parsed JSON of 2xx answers when keep_bodies


@dataclass
class LoadResult:
    records: list[Record]
    seconds: float  # wall time of the whole run
    skipped: int = 0  # open loop: scheduled starts skipped because max_in_flight was reached
    extra: dict = field(default_factory=dict)


async def run_load(
    url: str,
    *,
    path: str = "/v1/translate",
    body: Callable[[int], dict] = translate_body,
    concurrency: int | None = 8,
    rate: float | None = None,
    arrivals: Sequence[float] | None = None,
    seconds: float = 10.0,
    max_requests: int = 100_000,
    max_in_flight: int = 512,
    timeout: float = 60.0,
    headers: dict[str, str] | None = None,
    keep_bodies: bool = False,
    stop: asyncio.Event | None = None,
    sink: list[Record] | None = None,
    request_headers: Callable[[int], dict[str, str]] | None = None,
) -> LoadResult:
    """Closed loop with ``concurrency`` workers, or open loop at ``rate`` requests/s (if given) or
    at the start times ``arrivals`` (seconds from the start, ascending; request i starts at the i-th).

    Stops starting requests after ``seconds`` or ``max_requests`` (or when ``stop`` is set) and
    waits for the ones in flight (each bounded by ``timeout``).  Records are appended to ``sink``
    (if given) as they complete, so a caller can watch the run live (``scripts/soak.py`` does);
    ``request_headers(i)`` adds headers to request i (e.g. an ``X-Request-ID``)."""
    records: list[Record] = sink if sink is not None else []
    counter = itertools.count()
    limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
    t0 = time.perf_counter()
    end = t0 + seconds
    skipped = 0

    def more() -> bool:
        return time.perf_counter() < end and not (stop is not None and stop.is_set())

    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits, headers=headers) as client:

        async def one(i: int) -> None:
            start = time.perf_counter()
            try:
                r = await client.post(path, json=body(i), headers=request_headers(i) if request_headers else None)
                rec = Record(i, start - t0, time.perf_counter() - start, r.status_code, r.headers.get("retry-after"))
                if r.status_code >= 400:
                    rec.error = r.text[:300]
                elif keep_bodies:
                    rec.body = r.json()
            except httpx.HTTPError as e:
                rec = Record(i, start - t0, time.perf_counter() - start, 0, error=f"{type(e).__name__}: {e}"[:300])
            records.append(rec)

        if rate is None and arrivals is None:  # closed loop

            async def worker() -> None:
                while more():
                    i = next(counter)
                    if i >= max_requests:
                        return
                    await one(i)

            await asyncio.gather(*(worker() for _ in range(concurrency or 1)))
        else:  # open loop: start i at t0 + arrivals[i], or t0 + i / rate
            tasks: set[asyncio.Task] = set()
            for i in range(max_requests if arrivals is None else min(max_requests, len(arrivals))):
                due = t0 + (i / rate if arrivals is None else arrivals[i])
                now = time.perf_counter()
                if due > now:
                    await asyncio.sleep(due - now)
                if not more():
                    break
                if len(tasks) >= max_in_flight:
                    skipped += 1
                    continue
                task = asyncio.create_task(one(i))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            if tasks:
                await asyncio.gather(*tasks)
    return LoadResult(sorted(records, key=lambda r: r.index), time.perf_counter() - t0, skipped)


class _Exchange(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection of ``raw_closed_loop``: ``send`` writes a request and
    returns a future of (status, head fields, body), read by Content-Length as bytes arrive."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.head: tuple[int, dict[str, str], int] | None = None  # status, fields, body length

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, request: bytes) -> asyncio.Future:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.head is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
            fields = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:])}
            self.head = (int(lines[0].split()[1]), fields, int(fields.get("content-length", 0)))
            del self.buf[: end + 4]
        status, fields, length = self.head
        if len(self.buf) >= length:
            answer, self.buf, self.head = bytes(self.buf[:length]), self.buf[length:], None
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result((status, fields, answer))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionResetError("the server closed the connection"))


async def raw_closed_loop(
    url: str,
    *,
    path: str = "/v1/translate",
    body: Callable[[int], dict] = translate_body,
    concurrency: int = 8,
    max_requests: int = 100,
    timeout: float = 60.0,
) -> LoadResult:
    """The closed loop of ``run_load`` (``concurrency`` workers, ``max_requests`` requests) on a lean
    client: one keep-alive HTTP/1.1 connection per worker (an ``asyncio.Protocol``, no streams),
    bodies encoded before the clock starts, answers read by their Content-Length.  It spends a
    fraction of httpx's CPU per request, so a benchmark on the server's own cores measures the
    server rather than the client.  Any 2xx answer is read and dropped; other statuses are recorded
    with their first 300 bytes."""
    host, _, port = url.split("://", 1)[1].rstrip("/").partition(":")
    payloads = []
    for i in range(max_requests):
        data = json.dumps(body(i)).encode()
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n")  # fmt: skip
        payloads.append(head.encode() + data)
    records: list[Record] = []
    counter = itertools.count()
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()

    def expire(waiter: asyncio.Future) -> None:
        if not waiter.done():
            waiter.set_exception(asyncio.TimeoutError(f"no answer within {timeout} s"))

    async def connect() -> tuple[asyncio.Transport, _Exchange]:
        return await loop.create_connection(_Exchange, host, int(port or 80))

    async def worker() -> None:
        transport, conn = await connect()
        try:
            while (i := next(counter)) < max_requests:
                start = time.perf_counter()
                try:
                    waiter = conn.send(payloads[i])
                    timer = loop.call_later(timeout, expire, waiter)
                    try:
                        status, fields, answer = await waiter
                    finally:
                        timer.cancel()
                    rec = Record(i, start - t0, time.perf_counter() - start, status, fields.get("retry-after"))
                    if status >= 400:
                        rec.error = answer[:300].decode(errors="replace")
                    records.append(rec)
                except (OSError, asyncio.TimeoutError) as e:
                    records.append(Record(i, 0.0, time.perf_counter() - t0, 0, error=f"{type(e).__name__}: {e}"[:300]))
                    transport.close()
                    transport, conn = await connect()
        finally:
            transport.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return LoadResult(sorted(records, key=lambda r: r.index), time.perf_counter() - t0)


def event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for a client: uvloop's where installed (a fraction of the default loop's
    CPU per request), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(coroutine: Any) -> Any:
    """``asyncio.run`` on ``event_loop()``."""
    loop = event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]); nan for no values."""
    if not values:
        return math.nan
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(q / 100 * len(v)) - 1))]


def summarize(result: LoadResult) -> dict:
    recs = result.records
    ok = [r for r in recs if 200 <= r.status < 300]
    shed = [r for r in recs if r.status == 429]
    other = [r for r in recs if not (200 <= r.status < 300 or r.status == 429)]
    span = result.seconds or math.nan
    return {
        "requests": len(recs),
        "ok": len(ok),
        "rejected_429": len(shed),
        "errors": len(other),
        "error_statuses": sorted({r.status for r in other}),
        "skipped": result.skipped,
        "seconds": round(result.seconds, 2),
        "offered_per_s": round(len(recs) / span, 1),
        "goodput_per_s": round(len(ok) / span, 1),
        "ok_p50_ms": round(percentile([r.latency for r in ok], 50) * 1000, 1),
        "ok_p99_ms": round(percentile([r.latency for r in ok], 99) * 1000, 1),
        "429_p50_ms": round(percentile([r.latency for r in shed], 50) * 1000, 1),
        "429_p99_ms": round(percentile([r.latency for r in shed], 99) * 1000, 1),
        "429_max_ms": round(max((r.latency for r in shed), default=math.nan) * 1000, 1),
        "429_with_retry_after": sum(1 for r in shed if r.retry_after and r.retry_after.isdigit()),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--path", default="/v1/translate")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--concurrency", type=int, default=8, help="closed loop: this many workers")
    mode.add_argument("--rate", type=float, default=None, help="open loop: requests started per second")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--max-requests", type=int, default=100_000)
    ap.add_argument("--max-in-flight", type=int, default=512)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--json", default=None, help="also write the summary and every record here")
    args = ap.parse_args(argv)
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else None
    result = asyncio.run(
        run_load(
            args.url,
            path=args.path,
            concurrency=None if args.rate else args.concurrency,
            rate=args.rate,
            seconds=args.seconds,
            max_requests=args.max_requests,
            max_in_flight=args.max_in_flight,
            timeout=args.timeout,
            headers=headers,
        )
    )
    summary = summarize(result)
    width = max(map(len, summary))
    for k, v in summary.items():
        print(f"{k:<{width}}  {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "records": [asdict(r) for r in result.records]}, f)


if __name__ == "__main__":
    main()
