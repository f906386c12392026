"""OpenTelemetry tracing (``rendition.service.tracing``): the app in-process with an in-memory span exporter.
Requests get the FastAPI instrumentation's server span, and under it the batcher's queue-wait and
encode/decode spans with the batch's times; health and metrics are not traced; an app without
tracing makes no spans; and a real server with OTEL_EXPORTER_OTLP_ENDPOINT set exports them over
OTLP/HTTP to a receiver in the test."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastapi.testclient import TestClient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from rendition.service import tracing
from rendition.service.app import create_app
from rendition.service.settings import Settings


def ready_client(app) -> TestClient:
    client = TestClient(app)
    client.__enter__()
    deadline = time.monotonic() + 90
    while client.get("/health/ready").status_code != 200:
        assert time.monotonic() < deadline, "not ready"
        time.sleep(0.05)
    return client


def settings(model_dirs) -> Settings:
    return Settings(
        translator_path=model_dirs["translator"], encoder_path=model_dirs["encoder"],
        default_max_length=8, default_beam_size=2, max_wait_ms=0, batch_delay_ms=50, translation_workers=1,
        truncate_translations=True,  # the random translator runs to max_length: its cut output comes back flagged, not a 422
    )


@pytest.fixture(scope="module")
def traced(model_dirs):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = create_app(settings(model_dirs))
    assert tracing.setup(app, tracer_provider=provider)
    client = ready_client(app)
    exporter.clear()  # the readiness polls (not traced anyway)
    yield client, exporter
    client.__exit__(None, None, None)
    tracing._tracer = None  # leave the module as other tests expect it (tracing off)


def server_span(spans, route: str):
    (span,) = [s for s in spans if s.kind == SpanKind.SERVER and s.attributes.get("http.route") == route]
    return span


def test_translation_request_has_queue_wait_and_decode_spans(traced):
    client, exporter = traced
    r = client.post("/v1/translate", json={"text": ["Hello", "Good morning"], "source": "en", "target": "fr"})
    assert r.status_code == 200
    spans = exporter.get_finished_spans()
    root = server_span(spans, "/v1/translate")
    ours = {s.name: s for s in spans if s.name.startswith("rendition.")}
    assert set(ours) == {"rendition.queue_wait", "rendition.decode"}
    wait, decode = ours["rendition.queue_wait"], ours["rendition.decode"]
    for s in (wait, decode):
        assert s.context.trace_id == root.context.trace_id
        assert s.parent.span_id == root.context.span_id  # children of the request's server span
        assert root.start_time <= s.start_time <= s.end_time <= root.end_time
        assert s.attributes["rendition.model"] == "translator" and s.attributes["rendition.sentences"] == 2
    assert wait.end_time == decode.start_time  # decoding starts when the wait ends (its first sentence joins a search)
    assert decode.end_time - decode.start_time >= 50e6  # RENDITION_BATCH_DELAY_MS=50 is inside the model's time
    assert decode.attributes["rendition.tokens"] > 2


def test_embeddings_request_has_an_encode_span_and_health_is_not_traced(traced):
    client, exporter = traced
    exporter.clear()
    assert client.get("/health/ready").status_code == 200
    assert client.get("/metrics").status_code == 200
    assert exporter.get_finished_spans() == ()
    r = client.post("/v1/embeddings", json={"input": ["A tool for translation.", "Un outil.", "Three"]})
    assert r.status_code == 200
    spans = exporter.get_finished_spans()
    root = server_span(spans, "/v1/embeddings")
    (encode,) = [s for s in spans if s.name == "rendition.encode"]
    assert encode.parent.span_id == root.context.span_id
    assert encode.attributes["rendition.model"] == "encoder" and encode.attributes["rendition.sentences"] == 3


def test_an_app_without_tracing_makes_no_spans(traced, model_dirs, monkeypatch):
    _, exporter = traced
    exporter.clear()
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert not tracing.enabled_by_env()
    client = ready_client(create_app(settings(model_dirs)))
    try:
        assert client.post("/v1/translate", json={"text": "Hello", "source": "en", "target": "fr"}).status_code == 200
    finally:
        client.__exit__(None, None, None)
    assert exporter.get_finished_spans() == ()  # the traced app's tracer saw no context from this one
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318")
    assert tracing.enabled_by_env()


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps every ExportTraceServiceRequest it is sent."""

    received: list[ExportTraceServiceRequest] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            msg = ExportTraceServiceRequest()
            msg.ParseFromString(body)
            self.received.append(msg)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_a_real_server_exports_spans_over_otlp_when_the_endpoint_is_set(start_server, monkeypatch):
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{collector.server_address[1]}")
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # export every 100 ms
        monkeypatch.setenv("OTEL_SERVICE_NAME", "rendition-test")
        srv = start_server()
        assert srv.http.post("/v1/translate", json={"text": "Hello", "source": "en", "target": "fr"}).status_code == 200
        deadline = time.monotonic() + 30
        names: set[str] = set()
        while not {"rendition.queue_wait", "rendition.decode", "POST /v1/translate"} <= names:
            assert time.monotonic() < deadline, f"spans received: {names}"
            time.sleep(0.1)
            spans = [(rs, s) for m in _Collector.received for rs in m.resource_spans for ss in rs.scope_spans for s in ss.spans]
            names = {s.name for _, s in spans}
        services = {a.value.string_value for rs, _ in spans for a in rs.resource.attributes if a.key == "service.name"}
        assert services == {"rendition-test"}
        assert not any("/health" in n or "/metrics" in n for n in names)  # the readiness polls are not traced
        srv.stop()
    finally:
        collector.shutdown()
