"""The app in-process (FastAPI TestClient): settings injected through the dependency, and a model
whose search raises failing only that search's request while the server stays ready."""

from __future__ import annotations

import gc
import time

import pytest
import torch
from fastapi.testclient import TestClient

from rendition.model.translation.scheduler import worker_layout
from rendition.model.translation.translator import Translator
from rendition.service.app import create_app
from rendition.service.deps import get_settings
from rendition.service.settings import Settings


class PoisonedBackend:
    """The translator's back end, raising on any source that holds the word "Poison"."""

    def __init__(self, backend, poison: list[int]):
        self.backend, self.poison = backend, poison

    def __getattr__(self, name):
        return getattr(self.backend, name)

    def encode(self, src):
        if any(tok in self.poison for tok in src.flatten().tolist()):
            raise RuntimeError("poisoned batch")
        return self.backend.encode(src)


@pytest.fixture(scope="module")
def client(model_dirs):
    poisoned = Translator.from_pretrained(model_dirs["translator"], device="cpu")
    poisoned.backend = PoisonedBackend(poisoned.backend, poisoned.tokenizer.encode(["Poison"])[0])
    settings = Settings(models=["translator"], default_max_length=8, default_beam_size=2, max_wait_ms=0, truncate_translations=True)
    app = create_app(settings, translator=poisoned)
    with TestClient(app) as c:
        deadline = time.monotonic() + 60
        while c.get("/health/ready").status_code != 200:
            assert time.monotonic() < deadline, "not ready"
            time.sleep(0.05)
        yield c


def test_a_failing_search_fails_only_its_request_and_the_server_stays_ready(client):
    body = {"text": ["Hello", "World"], "source": "en", "target": "fr"}
    bad = client.post("/v1/translate", json={**body, "text": ["Hello", "Poison"]})
    assert bad.status_code == 500
    assert "poisoned batch" in bad.json()["detail"] and "RuntimeError" in bad.json()["detail"]
    assert client.get("/health/ready").status_code == 200
    good = client.post("/v1/translate", json=body)
    assert good.status_code == 200 and len(good.json()["results"]) == 2
    metrics = client.get("/metrics").text
    assert 'rendition_errors_total{type="batch_failed"} 1.0' in metrics


def test_settings_come_from_the_dependency(client):
    body = {"text": ["Hello", "World"], "source": "en", "target": "fr"}
    assert client.post("/v1/translate", json=body).status_code == 200
    client.app.dependency_overrides[get_settings] = lambda: Settings(max_items=1)
    try:
        r = client.post("/v1/translate", json=body)
        assert r.status_code == 422 and "the limit is 1" in r.text
    finally:
        client.app.dependency_overrides.clear()


def test_default_worker_layout_counts_the_cores_before_the_model_thread_loads(model_dirs):
    """Left to defaults, the continuous engine runs ``worker_layout()`` for the threads torch had when
    the app started, although the model thread loads on one thread and torch's thread count is
    process-wide (it once came out as one worker of one thread)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        settings = Settings(translator_path=model_dirs["translator"], models=["translator"], warmup=False)
        with TestClient(create_app(settings)) as c:
            deadline = time.monotonic() + 60
            while c.get("/health/ready").status_code != 200:
                assert time.monotonic() < deadline, "not ready"
                time.sleep(0.05)
            queue = c.app.state.rendition.queues["translator"]
            assert (queue.scheduler.workers, queue.scheduler.threads) == worker_layout(cores=2) == (2, 1)
    finally:
        torch.set_num_threads(threads)


def test_what_is_loaded_at_start_up_is_out_of_the_cyclic_collectors_scans(client):
    """Once ready, the app's state and the loaded translator are frozen (``gc.freeze``): a full
    collection does not scan them again; a request's objects still are scanned (and collected)."""
    state = client.app.state.rendition
    assert client.post("/v1/translate", json={"text": "Hello", "source": "en", "target": "fr"}).status_code == 200
    new = object.__new__(type("Later", (), {}))  # (a tracked object made after the start)
    tracked = {id(o) for o in gc.get_objects()}
    assert id(state) not in tracked and id(state.translator.translator) not in tracked
    assert id(new) in tracked
