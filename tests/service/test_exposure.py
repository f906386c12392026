"""Safe exposure defaults against real servers: ``/metrics`` behind a bearer token or on its own
port (``RENDITION_METRICS_TOKEN`` / ``RENDITION_METRICS_PORT``), CORS off unless
``RENDITION_CORS_ORIGINS`` lists origins, and the SIGTERM drain (``rendition.service.main``) with both."""

from __future__ import annotations

import signal
import socket
import time

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import ValidationError

from rendition.service.settings import Settings

TOKEN = "metrics-s3cret"
ORIGIN = "https://app.example"
PREFLIGHT = {"Origin": ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def requests_total(text: str, route: str) -> float:
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    return sum(s.value for s in fams["rendition_requests"].samples if s.name.endswith("_total") and s.labels["route"] == route)


def translate(srv, **headers: str) -> httpx.Response:
    return srv.http.post("/v1/translate", json={"text": "Hello", "source": "en", "target": "fr"}, headers=headers)


def test_defaults_open_metrics_and_no_cors(start_server):
    srv = start_server()
    assert srv.http.get("/metrics").status_code == 200
    # no CORS headers for any origin: a browser on another site cannot read the answers
    r = translate(srv, Origin=ORIGIN)
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    pre = srv.http.options("/v1/translate", headers=PREFLIGHT)
    assert pre.status_code >= 400 and "access-control-allow-origin" not in pre.headers


def test_metrics_token_on_the_api_port_and_second_signal_skips_the_drain(start_server):
    srv = start_server(metrics_token=TOKEN, drain_seconds=60)
    r = srv.http.get("/metrics")
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "RENDITION_METRICS_TOKEN" in r.json()["detail"]
    assert srv.http.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert srv.http.get("/metrics", headers={"Authorization": TOKEN}).status_code == 401  # scheme required
    ok = srv.http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and "rendition_requests_total" in ok.text
    assert srv.http.get("/health/ready").status_code == 200  # health stays open
    # SIGTERM starts a 60 s drain; a second one closes at once, still with a clean exit
    srv.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 10
    while srv.http.get("/health/ready").status_code != 503:
        assert time.monotonic() < deadline, "not draining"
        time.sleep(0.05)
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=30) == 0
    assert time.monotonic() - t0 < 30


def test_metrics_port_with_token_and_cors_origins(start_server):
    mport = free_port()
    srv = start_server(metrics_port=mport, metrics_token=TOKEN, cors_origins=f"{ORIGIN}, https://other.example", drain_seconds=2)
    metrics = httpx.Client(base_url=f"http://127.0.0.1:{mport}", timeout=30)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        # /metrics moved off the API port, with a message saying where
        r = srv.http.get("/metrics", headers=auth)
        assert r.status_code == 404 and str(mport) in r.text
        assert metrics.get("/metrics").status_code == 401
        assert metrics.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
        assert metrics.get("/v1/translate", headers=auth).status_code == 404  # the metrics port serves nothing else
        before = requests_total(metrics.get("/metrics", headers=auth).text, "/v1/translate")

        # CORS for the listed origins only
        r = translate(srv, Origin=ORIGIN)
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == ORIGIN
        assert "x-request-id" in r.headers["access-control-expose-headers"].lower()
        pre = srv.http.options("/v1/translate", headers=PREFLIGHT)
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == ORIGIN
        assert "POST" in pre.headers["access-control-allow-methods"]
        evil = srv.http.options("/v1/translate", headers=PREFLIGHT | {"Origin": "https://evil.example"})
        assert evil.status_code == 400 and "access-control-allow-origin" not in evil.headers
        assert "access-control-allow-origin" not in translate(srv, Origin="https://evil.example").headers

        # the metrics port counts the API port's requests (same registry, same process)
        after = requests_total(metrics.get("/metrics", headers=auth).text, "/v1/translate")
        assert after - before == 2

        # during the drain the API is not ready but metrics can still be scraped; then both close
        srv.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 1.5
        while srv.http.get("/health/ready").status_code != 503:
            assert time.monotonic() < deadline, "not draining"
            time.sleep(0.05)
        assert metrics.get("/metrics", headers=auth).status_code == 200
        assert srv.proc.wait(timeout=30) == 0
        with pytest.raises(httpx.TransportError):
            metrics.get("/metrics", headers=auth, timeout=5)
    finally:
        metrics.close()


def test_metrics_port_must_differ_from_the_api_port():
    with pytest.raises(ValidationError, match="metrics_port"):
        Settings(port=8000, metrics_port=8000)
    assert Settings(metrics_token="", metrics_port="").metrics_token is None  # empty env values mean unset
