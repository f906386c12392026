"""Every Prometheus metric of the service, declared in one place (all names start with ``rendition_``).

Each app owns its own ``CollectorRegistry`` (so several apps can live in one test process);
``GET /metrics`` renders it in the text exposition format.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
TOKEN_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self._http(self.registry)
        self._batching(self.registry)
        self._admission(self.registry)
        self._work(self.registry)
        self._lifecycle(self.registry)

    def _http(self, r: CollectorRegistry) -> None:
        self.requests = Counter("rendition_requests", "HTTP requests", ["method", "route", "status"], registry=r)
        self.request_latency = Histogram(
            "rendition_request_duration_seconds",
            "HTTP request latency",
            ["method", "route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.in_flight = Gauge("rendition_requests_in_flight", "HTTP requests being served", ["route"], registry=r)
        self.errors = Counter("rendition_errors", "errors by type", ["type"], registry=r)
        self._answered: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self._in_flight: dict[str, Gauge] = {}
        self._translated: dict[tuple[str, str], Counter] = {}

    def answered(self, method: str, route: str, status: int, seconds: float) -> None:
        """One answered request: its count and latency (the labelled series looked up once per label values)."""
        key = (method, route, status)
        if (series := self._answered.get(key)) is None:
            series = self._answered[key] = (
                self.requests.labels(method, route, str(status)), self.request_latency.labels(method, route, str(status))
            )
        series[0].inc()
        series[1].observe(seconds)

    def in_flight_of(self, route: str) -> Gauge:
        """The in-flight gauge of one route (looked up once per route)."""
        if (gauge := self._in_flight.get(route)) is None:
            gauge = self._in_flight[route] = self.in_flight.labels(route)
        return gauge

    def translated(self, pair: str, route: str, texts: int) -> None:
        """Texts translated for one language pair, ``route`` "direct" or "english" (the series looked up once)."""
        key = (pair, route)
        if (series := self._translated.get(key)) is None:
            series = self._translated[key] = self.translations.labels(pair, route)
        series.inc(texts)

    def _batching(self, r: CollectorRegistry) -> None:
        """The queues, the batches and the translator's running searches."""
        self.queue_depth = Gauge(
            "rendition_queue_depth", "sentences waiting in the batcher queue", ["model"], registry=r
        )
        self.queue_wait = Histogram(
            "rendition_queue_wait_seconds",
            "time a sentence waits before its batch starts",
            ["model"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram(
            "rendition_batch_size", "sentences per batch (the continuous translator: per decoding step)", ["model"], buckets=SIZE_BUCKETS, registry=r
        )
        self.batch_tokens = Histogram(
            "rendition_batch_tokens", "input tokens per batch (unpadded)", ["model"], buckets=TOKEN_BUCKETS, registry=r
        )
        self.batch_seconds = Histogram(
            "rendition_batch_seconds", "model time per batch", ["model"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.compute_seconds = Histogram(
            "rendition_compute_seconds",
            "time a sentence spends in the model (translator: from joining a search to its result; the rest of "
            "its latency is rendition_queue_wait_seconds)",
            ["model"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.running_sentences = _per_worker("rendition_running_sentences", "sentences in the translator's running searches, per worker", r)
        self.running_rows = _per_worker("rendition_running_rows", "rows (sentences x beams) each decoding step computes, per worker", r)
        self.step_seconds = Histogram(
            "rendition_decode_step_seconds",
            "time of one decoding step of a running search (steps per second: rate(rendition_decode_steps_total))",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
            registry=r,
        )
        self.dropped = Counter(
            "rendition_dropped_sentences", "queued sentences dropped before running", ["model", "reason"], registry=r
        )

    def _admission(self, r: CollectorRegistry) -> None:
        """The admission ledger's rates (service/admission.py)."""
        self.admission_unit_seconds = Gauge(
            "rendition_admission_unit_seconds",
            "measured wall seconds per unit of translation work (source tokens x rows per decoding step) "
            "with the translator busy: the rate the admission ledger values its work at",
            registry=r,
        )
        self.admission_in_flight_seconds = Gauge(
            "rendition_admission_in_flight_seconds",
            "expected seconds of the translation work admitted and not finished (429 beyond the request timeout)",
            registry=r,
        )
        self.admission_output_ratio = Gauge(
            "rendition_admission_output_ratio",
            "measured output tokens per source token of the finished sentences, per language pair",
            ["pair"],
            registry=r,
        )

    def _work(self, r: CollectorRegistry) -> None:
        """What the models computed."""
        self.input_tokens = Counter("rendition_input_tokens", "input tokens processed", ["model"], registry=r)
        self.generated_tokens = Counter(
            "rendition_generated_tokens", "tokens generated by the translator (best hypotheses)", registry=r
        )
        self.decode_steps = Counter("rendition_decode_steps", "decoder steps run by the translator", registry=r)
        self.kv_cache_bytes = _per_worker("rendition_kv_cache_bytes", "KV-cache bytes held by the translator's running searches, per worker", r)
        self.length_fallbacks = Counter(
            "rendition_length_fallbacks",
            "sentences whose translation reached its length limit and were decoded again with a repetition "
            "constraint (outcome: ended, or still at the limit)",
            ["outcome"],
            registry=r,
        )
        self.translations = Counter(
            "rendition_translations",
            "texts translated per language pair (only pairs the loaded translators serve) and route: direct, or "
            "through English (two translators in a row)",
            ["pair", "route"],
            registry=r,
        )
        self.glossary_terms = Counter(
            "rendition_glossary_terms",
            "glossary terms found in the sentences translated (outcome: placed where the translator kept their "
            "stand-in, or appended because it lost it)",
            ["outcome"],
            registry=r,
        )

    def _lifecycle(self, r: CollectorRegistry) -> None:
        self.shutdown_cancelled = Counter(
            "rendition_shutdown_cancelled",
            "requests still running at the drain deadline, cancelled and answered 503 (RENDITION_DRAIN_DEADLINE_S)",
            registry=r,
        )
        self.model_load = Gauge(
            "rendition_model_load_seconds", "time to load and warm up a model", ["model"], registry=r
        )
        self.build_info = Gauge(
            "rendition_build_info", "build and runtime information", ["version", "device", "dtype"], registry=r
        )


def _per_worker(name: str, documentation: str, registry: CollectorRegistry) -> Gauge:
    """A gauge with one series per translator worker (label ``worker``)."""
    return Gauge(name, documentation, ["worker"], registry=registry)
