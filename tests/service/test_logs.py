"""``rendition.service.logs``: the access lines are written together (at most ``ACCESS_FLUSH_S``
late, at once when many wait or no loop runs), in order, before any other log record, and at exit."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import subprocess
import sys

from rendition.service import logs


def test_lines_wait_for_the_interval_and_keep_their_order():
    out = io.StringIO()
    writer = logs.LineWriter(out, delay_s=0.2)

    async def run() -> tuple[str, str, str]:
        writer.write("a\n")
        await asyncio.sleep(0)
        writer.write("b\n")
        await asyncio.sleep(0.01)  # (loop iterations pass: the lines still wait)
        early = out.getvalue()
        writer.write("c\n")
        await asyncio.sleep(0.3)
        later = out.getvalue()
        writer.write("d\n")  # the next interval starts with the next line
        await asyncio.sleep(0)
        return early, later, out.getvalue()

    early, later, last = asyncio.run(run())
    assert (early, later, last) == ("", "a\nb\nc\n", "a\nb\nc\n")
    writer.flush()
    assert out.getvalue() == "a\nb\nc\nd\n"


def test_without_a_delay_the_lines_of_one_loop_iteration_go_together():
    out = io.StringIO()
    writer = logs.LineWriter(out)

    async def run() -> tuple[str, str]:
        writer.write("a\n")
        writer.write("b\n")
        before = out.getvalue()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return before, out.getvalue()

    assert asyncio.run(run()) == ("", "a\nb\n")


def test_many_lines_waiting_are_written_at_once_and_without_a_loop_at_once():
    out = io.StringIO()
    writer = logs.LineWriter(out, delay_s=60, max_lines=3)

    async def run() -> list[str]:
        seen = []
        for k in range(5):
            writer.write(f"{k}\n")
            seen.append(out.getvalue())
        return seen

    assert asyncio.run(run()) == ["", "", "0\n1\n2\n", "0\n1\n2\n", "0\n1\n2\n"]
    plain = io.StringIO()
    logs.LineWriter(plain, delay_s=60).write("x\n")  # (no running loop)
    assert plain.getvalue() == "x\n"


def test_another_record_writes_the_access_lines_waiting_before_it(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(logs, "_access_writer", logs.LineWriter(out, delay_s=60))
    handler = logs._Handler(out)
    handler.setFormatter(logs.JsonFormatter())
    other = logging.getLogger("rendition.test-logs")
    monkeypatch.setattr(other, "handlers", [handler])
    monkeypatch.setattr(other, "propagate", False)
    monkeypatch.setattr(logs._access, "disabled", False)
    monkeypatch.setattr(logs._access, "handlers", [])
    monkeypatch.setattr(logs._access, "propagate", True)
    root, access_level = logging.getLogger(), logs._access.level
    level = root.level
    root.setLevel(logging.INFO)  # (setLevel: the loggers' cached levels are cleared)
    logs._access.setLevel(logging.NOTSET)

    async def run() -> str:
        for rid, method, route, seconds in (
            ("r1", "POST", "/v1/translate", 0.0123),
            ("r2", "GET", "/health/live", 0.001),
        ):
            token = logs.request_id.set(rid)
            logs.access(method, route, 200, seconds)
            logs.request_id.reset(token)
        before = out.getvalue()
        other.warning("something happened")
        return before

    try:
        assert asyncio.run(run()) == ""
    finally:
        root.setLevel(level)
        logs._access.setLevel(access_level)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["msg"], x.get("request_id"), x.get("route")) for x in lines] == [
        ("request", "r1", "/v1/translate"), ("request", "r2", "/health/live"), ("something happened", None, None),
    ]  # fmt: skip
    assert lines[0]["duration_ms"] == 12.3 and lines[0]["status"] == 200


def test_the_lines_waiting_at_exit_are_written():
    code = (
        "import asyncio\n"
        "from rendition.service import logs\n"
        "logs.setup_logging('info')\n"
        "async def main():\n"
        "    logs.request_id.set('last')\n"
        "    logs.access('POST', '/v1/translate', 200, 0.5)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [(x["msg"], x["request_id"]) for x in lines] == [("request", "last")]
