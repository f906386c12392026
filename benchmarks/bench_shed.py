"""Overload shedding: how fast a 429 is decided server-side under 500 concurrent clients.

Starts ``python -m rendition.service.main`` (the shipped models, or ``--translator``/``--encoder``) with a
small queue and a pinned batch time, fires ``--clients`` concurrent 8-item ``/v1/translate``
requests at once (one connection each, loopback), and reports the client-side statuses and the
server-side duration of each answer from the server's own JSON access log (``duration_ms``, the
time inside the ASGI app).  ``--root`` runs another checkout's service (e.g. an older commit)
for a before/after comparison.

    python benchmarks/bench_shed.py [--clients 500] [--root DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkout import tree_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [f"Sentence number {i} of the request, with a few more words in it." for i in range(8)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


async def fire(url: str, clients: int, burst: int) -> list[int]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        body = {"text": TEXTS, "source": "en", "target": "fr", "beam_size": 1, "max_length": 32}

        async def one(i: int) -> int:
            try:
                return (await http.post("/v1/translate", json=body, headers={"X-Request-ID": f"b{burst}-{i}"})).status_code
            except httpx.HTTPError:
                return 0

        return await asyncio.gather(*(one(i) for i in range(clients)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=500)
    ap.add_argument("--bursts", type=int, default=1, help="bursts one after the other (the first meets a fresh server)")
    ap.add_argument("--root", type=Path, default=ROOT)
    ap.add_argument("--translator", default=None)
    ap.add_argument("--encoder", default=None)
    args = ap.parse_args()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RENDITION_")}
    env.update(OMP_NUM_THREADS="1", RENDITION_TORCH_THREADS="1", RENDITION_MODELS="translator",
               RENDITION_BATCH_DELAY_MS="200", RENDITION_MAX_BATCH_SIZE="8", RENDITION_MAX_QUEUE="64",
               RENDITION_TRUNCATE_TRANSLATIONS="1", RENDITION_MAX_CONNECTIONS="2000")
    if args.translator:
        env["RENDITION_TRANSLATOR_PATH"] = args.translator
    with tempfile.NamedTemporaryFile("w+b", suffix=".log") as log, tempfile.TemporaryDirectory() as scratch:
        env = tree_env(args.root, scratch, env)  # (another checkout: its own tree)
        proc = subprocess.Popen([sys.executable, "-m", "rendition.service.main", "--port", str(port)], cwd=args.root, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                try:
                    if httpx.get(url + "/health/ready", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            statuses = []
            for b in range(args.bursts):
                statuses.append(asyncio.run(fire(url, args.clients, b)))
                time.sleep(3)  # the admitted work finishes
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        log.seek(0)
        served: dict[tuple[str, int], list[float]] = {}
        for line in log.read().decode(errors="replace").splitlines():
            if line.startswith("{"):
                rec = json.loads(line)
                if rec.get("msg") == "request" and rec.get("route") in ("/v1/translate", "unmatched"):
                    burst = rec.get("request_id", "").partition("-")[0]
                    served.setdefault((burst, rec["status"]), []).append(rec["duration_ms"])
    for b, st in enumerate(statuses):
        counts = {s: st.count(s) for s in sorted(set(st))}
        print(json.dumps({"root": str(args.root), "burst": b, "clients": args.clients, "client_statuses": counts}))
    for (burst, status), ms in sorted(served.items()):
        print(json.dumps({"burst": burst, "status": status, "n": len(ms), "server_ms_p50": round(statistics.median(ms), 2),
                          "server_ms_p99": round(pct(ms, 0.99), 2), "server_ms_max": round(max(ms), 2)}))


if __name__ == "__main__":
    main()
