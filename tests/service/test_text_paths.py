"""One text pipeline behind every path: the same texts give the same translations through the
HTTP route (a real server), ``rendition translate``, ``rendition translate-file`` on a .txt and a
gettext catalog, with the shipped translator (float32 everywhere, as the test servers run).

The texts hold a URL and a command line in backticks (spans kept), a placeholder, a glossary term,
and a sentence too long for the small ``max_length`` that is decoded a second time (counted by
the server) and comes back cut.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polib
import pytest

from rendition.model.translation.translator import DEFAULT_TRANSLATOR

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

TEXTS = [
    "Open https://example.com/docs and run `make all` in the project folder.",
    "Hello {name}, your order has shipped.",
    "The file manager shows hidden files.",
    "This package contains the shared libraries, the header files and the documentation that you need to build "
    "programs which use the library, together with examples of their use.",
]
GLOSSARY = {"file manager": "gestionnaire de fichiers"}
SEARCH = {"beam_size": 2, "max_length": 24}


def rendition(*args: str, stdin: str | None = None) -> str:
    script = Path(sys.executable).parent / "rendition"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rendition.service.cli"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([*cmd, *args], input=stdin, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def cli_options(glossary: Path) -> list[str]:
    return [
        "--source", "en", "--target", "fr", "--compute-type", "float32", "--workers", "1", "--quiet",
        "--beam-size", str(SEARCH["beam_size"]), "--max-length", str(SEARCH["max_length"]), "--glossary", str(glossary),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def server(start_server):
    return start_server(translator_path=DEFAULT_TRANSLATOR, truncate_translations=1)


@pytest.fixture(scope="module")
def glossary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("glossary") / "terms.json"
    path.write_text(json.dumps(GLOSSARY))
    return path


def test_every_path_gives_the_same_translations(server, glossary: Path, tmp_path: Path) -> None:
    before = server.sample("rendition_length_fallbacks", "_total")
    r = server.http.post("/v1/translate", json={"text": TEXTS, "source": "en", "target": "fr", "glossary": GLOSSARY, **SEARCH})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    http = [x["text"] for x in results]
    assert [bool(x.get("truncated")) for x in results] == [False, False, False, True]  # the long one is cut ...
    assert server.sample("rendition_length_fallbacks", "_total") > before  # ... after its second decoding
    assert "https://example.com/docs" in http[0] and "`make all`" in http[0]
    assert "{name}" in http[1] and "gestionnaire de fichiers" in http[2]

    lines = rendition("translate", *cli_options(glossary), stdin="".join(f"{t}\n" for t in TEXTS)).splitlines()
    assert lines == http

    txt = tmp_path / "in.txt"
    txt.write_text("\n\n".join(TEXTS) + "\n")
    rendition("translate-file", str(txt), str(tmp_path / "out.txt"), *cli_options(glossary))
    assert [line for line in (tmp_path / "out.txt").read_text().splitlines() if line] == http

    catalog = polib.POFile()
    catalog.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for t in TEXTS:
        catalog.append(polib.POEntry(msgid=t, msgstr=""))
    catalog.save(str(tmp_path / "messages.pot"))
    rendition("translate-file", str(tmp_path / "messages.pot"), str(tmp_path / "fr.po"), *cli_options(glossary))
    assert [e.msgstr for e in polib.pofile(str(tmp_path / "fr.po"))] == http


AUTO_TEXTS = [
    "The file manager shows hidden files.",
    "Le gestionnaire de fichiers affiche les fichiers cachés.",  # already in the target language
    "Thank you for your message. Je vous réponds dès que possible, avec tous les détails.",  # two languages
    "",
]


def test_source_auto_gives_the_same_translations_on_the_route_and_the_command(server, tmp_path: Path) -> None:
    """``source: "auto"`` on ``/v1/translate`` and ``rendition translate --source auto``: each text
    (line) from its own language, a run in the target language kept as it is."""
    sent = [t for t in AUTO_TEXTS if t]
    r = server.http.post("/v1/translate", json={"text": sent, "source": "auto", "target": "fr", **SEARCH})
    assert r.status_code == 200, r.text
    http = [x["text"] for x in r.json()["results"]]
    assert [x["detected_language"]["language"] for x in r.json()["results"]][:2] == ["en", "fr"]
    assert http[1] == sent[1] and http[2].endswith("Je vous réponds dès que possible, avec tous les détails.")
    assert not http[2].startswith("Thank you")  # (its English run translated)
    options = ["--source", "auto", "--target", "fr", "--compute-type", "float32", "--workers", "1", "--quiet",
               "--beam-size", str(SEARCH["beam_size"]), "--max-length", str(SEARCH["max_length"])]  # fmt: skip
    lines = rendition("translate", *options, stdin="".join(f"{t}\n" for t in AUTO_TEXTS)).split("\n")
    assert lines[: len(AUTO_TEXTS)] == [*http, ""]
