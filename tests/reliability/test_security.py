"""Security: API keys on every non-health route (constant-time comparison), weights only from
safetensors (a booby-trapped pickle is never unpickled), no client-chosen model paths, a non-root
container user, no request text in the logs at info level, and the dependency-audit script
failing clearly when the audit cannot run.

(The body-size limit is in test_hostile.py; tests/service covers bearer / LibreTranslate
``api_key`` / OpenAI SDK authentication on a few routes.)
"""

from __future__ import annotations

import hmac
import os
import pickle
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from rendition.model.translation.translator import Translator
from rendition.model.weights import ModelLoadError
from rendition.service import deps
from rendition.service.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
OPEN = {"/health/live", "/health/ready", "/metrics", "/languages", "/frontend/settings", "/health", "/download_file/{file_id}"}
LIBRETRANSLATE = {"/translate", "/detect", "/translate_file"}  # a bad key is LibreTranslate's 403 there
FILE = {"file": ("hello.txt", b"Hello.")}
KEY = "s3cret-key-0123456789"
BODIES = {
    "/v1/translate": {"text": "Hello", "source": "en", "target": "fr"},
    "/translate": {"q": "Hello", "source": "en", "target": "fr"},
    "/detect": {"q": "Hello"},
    "/v1/embeddings": {"input": "Hello"},
    "/v1/similarity": {"source_sentence": "Hello", "sentences": ["Hi"]},
    "/": {"inputs": "Hello"},
    "/embed": {"inputs": "Hello"},
    "/similarity": {"inputs": {"source_sentence": "Hello", "sentences": ["Hi"]}},
    "/rerank": {"query": "Hello", "texts": ["Hi"]},
    "/tokenize": {"inputs": "Hello"},
    "/decode": {"ids": [5, 6]},
}


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(api_keys=f"{KEY},other-key", log_level="info")


def call(server, method: str, path: str, headers: dict | None = None):
    path = path.replace("{model_id}", "rendition-disan")
    if path == "/download_file/{file_id}":  # its id is the credential: made with a key, for whoever holds the URL
        return download(server, headers)
    if method == "get":
        return server.http.get(path, headers=headers, timeout=30)
    if path == "/translate_file":
        return server.http.post(path, files=FILE, data={"source": "en", "target": "fr"}, headers=headers, timeout=30)
    return server.http.post(path, json=BODIES[path], headers=headers, timeout=30)


def download(server, headers: dict | None):
    made = server.http.post("/translate_file", files=FILE, data={"source": "en", "target": "fr"}, headers={"Authorization": f"Bearer {KEY}"})
    assert made.status_code == 200, made.text
    return server.http.get(made.json()["translatedFileUrl"], headers=headers, timeout=30)


def test_every_non_health_operation_needs_the_key(server):
    spec = server.http.get("/openapi.json").json()
    ops = [(m, p) for p, item in spec["paths"].items() for m in item]
    assert {p for _, p in ops} >= set(BODIES) | OPEN | {"/v1/models"}
    for method, path in ops:
        anonymous = call(server, method, path)
        if path in OPEN:
            assert anonymous.status_code == 200, path
            continue
        refused = 403 if path in LIBRETRANSLATE else 401
        assert anonymous.status_code == refused, (method, path, anonymous.status_code)
        for bad in (KEY[:-1], KEY + "x", KEY.upper(), "x", "Bearer", KEY + " " + KEY):
            r = call(server, method, path, {"Authorization": f"Bearer {bad}"})
            assert r.status_code == refused, (path, bad)
        assert call(server, method, path, {"Authorization": f"Basic {KEY}"}).status_code == refused
        good = call(server, method, path, {"Authorization": f"Bearer {KEY}"})
        assert good.status_code == 200, (method, path, good.text[:300])


def test_key_comparison_is_constant_time_and_checks_every_key(monkeypatch):
    calls: list[tuple[bytes, bytes]] = []

    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(deps.hmac, "compare_digest", spy)
    settings = Settings(api_keys="first-key,second-key,third-key")
    assert deps.key_is_valid(settings, "first-key")
    assert len(calls) == 3, "no early exit on the first match: every key is compared"
    calls.clear()
    assert not deps.key_is_valid(settings, "first-kez")
    assert len(calls) == 3 and all(isinstance(a, bytes) and isinstance(b, bytes) for a, b in calls)
    assert not deps.key_is_valid(settings, "\ud800")  # a lone surrogate is a wrong key, not a crash


def test_no_request_text_in_logs_at_info(server):
    marker = f"secret-{uuid.uuid4().hex}"
    auth = {"Authorization": f"Bearer {KEY}"}
    bodies = [
        ("/v1/translate", {"text": [f"{marker} one", f"{marker} two"], "source": "en", "target": "fr"}),
        ("/translate", {"q": f"{marker} three", "source": "en", "target": "fr"}),
        ("/v1/embeddings", {"input": f"{marker} four"}),
        ("/v1/similarity", {"source_sentence": marker, "sentences": [marker]}),
        ("/v1/translate", {"text": marker, "source": "en", "target": "xx"}),  # 400
        ("/v1/translate", {"text": marker * 2000, "source": "en", "target": "fr"}),  # 422 too long
        ("/v1/translate", {"text": marker, "source": "en", "target": "fr", "bogus": marker}),  # 422 extra field
    ]
    statuses = [server.http.post(p, json=b, headers=auth, timeout=30).status_code for p, b in bodies]
    assert statuses == [200, 200, 200, 200, 400, 422, 422]
    refused = server.log().count('"status": 401')
    r = server.http.post("/v1/translate", json=bodies[0][1], headers={"Authorization": f"Bearer {marker}"})
    assert r.status_code == 401  # a wrong key is not logged either
    log = server.log_once(lambda log: log.count('"status": 401') > refused)  # (every line written: the last one's is)
    assert '"level": "info"' in log and '"route": "/v1/similarity"' in log  # info lines were written
    assert marker not in log


class Trap:
    """Unpickling this runs ``Path(...).touch()``: the proof that a pickle was loaded."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_weights_load_only_from_safetensors_never_a_pickle(model_dirs, tmp_path):
    d = tmp_path / "translator"
    shutil.copytree(model_dirs["translator"], d)
    (d / "model.safetensors").unlink()
    sprung = tmp_path / "trap-sprung"
    for name in ("pytorch_model.bin", "model.bin", "model.pt", "model.pth", "model.ckpt", "model.pkl"):
        (d / name).write_bytes(pickle.dumps(Trap(sprung)))
    with pytest.raises(ModelLoadError, match="weights file not found"):
        Translator.from_pretrained(d, device="cpu")
    assert not sprung.exists(), "a pickle was unpickled"
    # a pickle renamed to model.safetensors is rejected by the safetensors parser, not unpickled
    (d / "model.safetensors").write_bytes(pickle.dumps(Trap(sprung)))
    with pytest.raises(ModelLoadError, match="cannot read weights"):
        Translator.from_pretrained(d, device="cpu")
    assert not sprung.exists()


def test_loading_code_never_uses_pickle():
    sources = [ROOT / "model" / f for f in ("weights.py", "translation/translator.py", "embedding/encoder.py")]
    sources += sorted((ROOT / "service").rglob("*.py"))
    for path in sources:
        text = path.read_text()
        assert not re.search(r"torch\.load\(|pickle\.load|import pickle|joblib", text), path


def test_requests_cannot_choose_model_paths(server):
    spec = server.http.get("/openapi.json").json()
    names = {p.lower() for schema in spec["components"]["schemas"].values() for p in schema.get("properties", {})}
    assert not names & {"path", "model_path", "file", "dir", "directory", "checkpoint", "weights"}
    # OpenAI's `model` field only names the loaded model (anything else is a 404); it never opens anything
    auth = {"Authorization": f"Bearer {KEY}"}
    r = server.http.post("/v1/embeddings", json={"input": "Hello", "model": "../../../../etc/passwd"}, headers=auth)
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    assert server.http.get("/v1/models/..%2F..%2Fetc%2Fpasswd", headers=auth).status_code == 404
    r = server.http.get("/v1/models/..passwd", headers=auth)
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"


def dockerfile_final_user(text: str) -> tuple[str | None, str]:
    """(the USER of the last stage, that stage's text)."""
    lines = re.sub(r"\\\n", " ", text).splitlines()
    stage: list[str] = []
    for line in lines:
        if re.match(r"^\s*FROM\s", line, re.I):
            stage = []
        stage.append(line)
    users = [line.split()[1] for line in stage if re.match(r"^\s*USER\s", line, re.I)]
    return (users[-1] if users else None), "\n".join(stage)


def test_container_runs_as_non_root():
    user, stage = dockerfile_final_user((ROOT / "Dockerfile").read_text())
    assert user is not None and user.split(":")[0] not in ("root", "0")
    name = user.split(":")[0]
    uid = re.search(rf"useradd[^\n]*--uid (\d+)[^\n]*\b{name}\b", stage)
    assert uid and int(uid.group(1)) > 0
    assert not re.search(r"^\s*USER\s+(root|0)\b", stage.split(f"USER {user}")[-1], re.M | re.I)


def test_dependency_audit_script_fails_clearly_when_it_cannot_audit(tmp_path):
    """Runs scripts/audit_deps.py: exit 0 (audited, clean), 1 (vulnerable) or 2 (audit not done,
    e.g. no advisory service from here); never a silent pass. Prints what it found."""
    if shutil.which("pip-audit") is None and not Path(sys.executable).with_name("pip-audit").exists():
        pytest.skip("pip-audit not installed")
    env_path = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": env_path + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "audit_deps.py"), "--timeout", "200"],
                          capture_output=True, text=True, timeout=260, env=env)
    print("\n" + proc.stdout + proc.stderr[-500:])
    assert proc.returncode in (0, 1, 2)
    if proc.returncode == 2:
        assert "audit NOT performed" in proc.stderr
    else:
        assert re.search(r"\d+ dependencies, \d+ audited", proc.stdout)

