"""The package as users install it: the wheel in a fresh virtual environment (``RENDITION_TEST_VENV``,
``scripts/installed-venv.sh``), run from a directory outside the source tree.

Every module of ``rendition.model`` and ``rendition.service`` imports there (those of the training
and export tools only where their extras are missing, and then for that reason alone), each from the
installed files; the shipped models and the web page are package data; and ``rendition serve`` on
the shipped models, as a user starts it, serves the page, its script and style, translates a
sentence the way the page does and translates a file.  The page in a real browser, document
translation and the real clients run against such servers too (``tests/service``: every test
server is started from the installed package).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import Server, console_command, in_ci, server_python, user_env

ROOT = Path(__file__).resolve().parents[1]
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def run_installed(code: str, cwd: Path) -> dict:
    out = subprocess.run([server_python(), "-c", code], cwd=cwd, env=user_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ci_runs_the_servers_from_the_installed_wheel() -> None:
    if not in_ci() and not os.environ.get("RENDITION_TEST_VENV"):
        pytest.skip("RENDITION_TEST_VENV is not set: the servers run from the editable install (outside the tree)")
    venv = Path(os.environ["RENDITION_TEST_VENV"]).resolve()
    assert Path(server_python()).parent.parent.resolve() == venv
    assert not str(venv).startswith(str(ROOT) + "/.venv")


IMPORT_ALL = r"""
import importlib, importlib.metadata as md, json, pkgutil, re, sys
import rendition.model, rendition.service
extras = set()
for req in md.requires("rendition") or []:
    if "extra ==" in req:
        extras.add(re.split(r"[^A-Za-z0-9_.-]", req)[0].lower().replace("-", "_"))
out = {"ok": [], "missing_extra": [], "failed": [], "files": {}}
for pkg in (rendition.model, rendition.service):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if info.name.rpartition(".")[2].startswith("_native_"):
            continue  # (the native kernels: C libraries loaded with ctypes, checked below)
        try:
            mod = importlib.import_module(info.name)
            out["ok"].append(info.name)
            out["files"][info.name] = getattr(mod, "__file__", None)
        except ModuleNotFoundError as e:
            top = (e.name or "").split(".")[0].lower().replace("-", "_")
            (out["missing_extra"] if top and top in extras | {"sentence_transformers", "yaml"} else out["failed"]).append(f"{info.name}: {e!r}")
        except Exception as e:
            out["failed"].append(f"{info.name}: {e!r}")
print(json.dumps(out))
"""


def test_every_module_imports_from_the_installed_package(tmp_path: Path) -> None:
    got = run_installed(IMPORT_ALL, tmp_path)
    assert not got["failed"], "\n".join(got["failed"])
    names = set(got["ok"])
    assert {"rendition.service.app", "rendition.service.routers.ui", "rendition.service.main", "rendition.model.translation.translator",
            "rendition.model.embedding.encoder", "rendition.model.kernels.native", "rendition.model.documents"} <= names
    # only the training and export tools may need their extras (train, ct2)
    assert all(m.startswith(("rendition.model.training", "rendition.model.export")) for m in got["missing_extra"]), got["missing_extra"]
    # and each came from the installed package (with the editable fallback, from the tree)
    if os.environ.get("RENDITION_TEST_VENV"):
        venv = str(Path(os.environ["RENDITION_TEST_VENV"]).resolve()) + "/"
        assert not [m for m, f in got["files"].items() if f and not str(Path(f).resolve()).startswith(venv)]


PACKAGE_DATA = r"""
import json
from importlib import resources
from rendition.model.translation.translator import DEFAULT_TRANSLATOR
from rendition.model.embedding.encoder import DEFAULT_ENCODER
from rendition.model.kernels import native
static = resources.files("rendition.service") / "static"
print(json.dumps({
    "models": [str(DEFAULT_TRANSLATOR), str(DEFAULT_ENCODER)],
    "files": sorted(p.name for d in (DEFAULT_TRANSLATOR, DEFAULT_ENCODER) for p in d.iterdir()),
    "static": sorted(p.name for p in static.iterdir()),
    "native": list(native.built()),
}))
"""


def test_the_models_the_page_and_the_kernels_are_in_the_installed_package(tmp_path: Path) -> None:
    got = run_installed(PACKAGE_DATA, tmp_path)
    if os.environ.get("RENDITION_TEST_VENV"):
        venv = str(Path(os.environ["RENDITION_TEST_VENV"]).resolve()) + "/"
        assert all(str(Path(m).resolve()).startswith(venv) for m in got["models"]), got["models"]
    assert got["files"].count("model.safetensors") == 2 and got["files"].count("sentencepiece.model") == 2
    assert {"index.html", "app.js", "style.css"} <= set(got["static"])
    assert "generic" in got["native"] and (os.uname().machine != "x86_64" or {"avx2", "avx512"} <= set(got["native"]))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """``rendition serve`` of the installed package on the shipped models, with its defaults (int8
    where the CPU has it), started from an empty directory."""
    log = tmp_path_factory.mktemp("user") / "server.log"
    srv = Server({**user_env(), "OMP_NUM_THREADS": "1"}, log, command=console_command(), timeout=120)
    try:
        yield srv.wait_ready(timeout=180).http
    finally:
        srv.stop()


def test_rendition_serve_from_the_installed_package_serves_the_page(served: httpx.Client) -> None:
    page = served.get("/", headers={"Accept": BROWSER_ACCEPT})
    assert page.status_code == 200 and "<title>Rendition</title>" in page.text, page.text[:300]
    assert served.get("/ui").text == page.text
    for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        r = served.get(f"/ui/{name}")
        assert r.status_code == 200 and r.headers["content-type"].startswith(kind) and len(r.content) > 1000
    # what the page does on start-up and on "Translate"
    assert served.get("/frontend/settings").status_code == 200
    assert {"en", "fr"} <= {lang["code"] for lang in served.get("/languages").json()}
    r = served.post("/translate", json={"q": "The cat sleeps.", "source": "auto", "target": "fr", "format": "text", "alternatives": 2, "api_key": ""})
    assert r.status_code == 200, r.text
    assert "chat" in r.json()["translatedText"].lower() and r.json()["detectedLanguage"]["language"] == "en"


def test_rendition_serve_from_the_installed_package_translates_a_file(served: httpx.Client) -> None:
    r = served.post("/translate_file", data={"source": "en", "target": "fr"},
                    files={"file": ("notes.txt", b"The cat sleeps.\n\nOpen the file.\n", "text/plain")})
    assert r.status_code == 200, r.text
    got = served.get(r.json()["translatedFileUrl"])
    assert got.status_code == 200
    lines = got.content.decode("utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and "chat" in lines[0].lower() and lines[2].startswith("Ouvr"), lines
