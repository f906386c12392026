"""Fixtures for the service tests: small random models on disk, and real uvicorn processes.

Servers run ``python -m rendition.service.main`` (what ``rendition serve`` calls; ``Server`` can start
the console script itself, as ``tests/test_installed.py`` does) on a free port with ``RENDITION_*``
env vars pointing at the random models; every wait is bounded.  They run the package
as users install it: the wheel installed into a fresh virtual environment (``RENDITION_TEST_VENV``,
built by ``scripts/installed-venv.sh``; ``scripts/test.sh`` builds it once), started from a directory
outside the source tree, so nothing of the tree is on their path.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx
import pytest
import torch
from prometheus_client.parser import text_string_to_metric_families
from safetensors.torch import save_file

from rendition.model.embedding.disan import DiSAN, DiSANConfig
from rendition.model.tokenizer import Tokenizer
from rendition.model.translation.transformer import Transformer, TransformerConfig

ROOT = Path(__file__).resolve().parents[2]
SPM = ROOT / "model" / "pretrained" / "translator" / "sentencepiece.model"


@pytest.fixture(scope="session")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A random translator (en<->fr) and a random DiSAN encoder, saved like the shipped models."""
    root = tmp_path_factory.mktemp("models")
    tok = Tokenizer(SPM)
    torch.manual_seed(0)
    tcfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=1, n_decoder_layers=1, languages=("en", "fr"))
    ecfg = DiSANConfig(vocab_size=tok.vocab_size, d_embed=32, d_model=32, d_out=48, max_length=64)
    out = {}
    for name, cfg, model in (("translator", tcfg, Transformer(tcfg)), ("encoder", ecfg, DiSAN(ecfg))):
        d = root / name
        d.mkdir()
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(d / "model.safetensors"))
        cfg.save(d / "config.json")
        shutil.copy(SPM, d / "sentencepiece.model")
        out[name] = d
    return out


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def server_python() -> str:
    """The interpreter of the installed package (``RENDITION_TEST_VENV``).  CI requires it; a
    developer's run without it uses this interpreter (the editable install), still started outside
    the tree."""
    venv = os.environ.get("RENDITION_TEST_VENV")
    if venv:
        python = Path(venv) / "bin" / "python"
        if not python.exists():
            raise RuntimeError(f"RENDITION_TEST_VENV={venv} has no bin/python (scripts/installed-venv.sh builds it)")
        return str(python)
    if in_ci():
        raise RuntimeError("CI starts the test servers from the installed wheel: RENDITION_TEST_VENV is not set (scripts/test.sh sets it)")
    return sys.executable


def user_env() -> dict[str, str]:
    """This process's environment without the ``RENDITION_*`` settings and ``PYTHONPATH``: what a
    user's shell would hand the installed package."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RENDITION_") and k != "PYTHONPATH"}


def module_command() -> list[str]:
    """``python -m rendition.service.main`` with the installed package's interpreter."""
    return [server_python(), "-m", "rendition.service.main"]


def console_command() -> list[str]:
    """``rendition serve``: the console script installed beside that interpreter, as a user runs it."""
    return [str(Path(server_python()).with_name("rendition")), "serve"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server process on a free port, started in ``log_path``'s directory (outside the source
    tree) with ``command`` (``module_command()`` unless given) and ``--host``/``--port``."""

    def __init__(self, env: dict[str, str], log_path: Path, command: Sequence[str] | None = None, timeout: float = 60.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.http = httpx.Client(base_url=self.url, timeout=timeout)  # one client: creating one per call costs ~1 s here
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [*(command or module_command()), "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=log_path.parent, env=env, stdout=self._log, stderr=subprocess.STDOUT,
        )

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def log_once(self, holds: Callable[[str], bool], timeout: float = 10.0) -> str:
        """The log once ``holds(log)`` (or at the timeout): the access lines are written together,
        up to ``rendition.service.logs.ACCESS_FLUSH_S`` after their requests were answered."""
        deadline = time.monotonic() + timeout
        while not holds(log := self.log()) and time.monotonic() < deadline:
            time.sleep(0.02)
        return log

    def wait_ready(self, timeout: float = 90.0) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                if self.http.get("/health/ready", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"server not ready in {timeout} s:\n{self.log()[-3000:]}")

    def metrics(self) -> dict:
        """{family name: family} from /metrics, parsed with prometheus-client's own parser."""
        text = self.http.get("/metrics", timeout=10).text
        return {f.name: f for f in text_string_to_metric_families(text)}

    def sample(self, family: str, suffix: str = "", **labels: str) -> float:
        """Sum of the samples of one family whose name ends with suffix and whose labels match."""
        fam = self.metrics().get(family)
        if fam is None:
            return 0.0
        return sum(s.value for s in fam.samples if s.name == family + suffix and all(s.labels.get(k) == v for k, v in labels.items()))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        self.http.close()


def server_env(model_dirs: dict[str, Path], **overrides: object) -> dict[str, str]:
    env = user_env()
    env.update(
        OMP_NUM_THREADS="1",
        RENDITION_TORCH_THREADS="1",
        RENDITION_DISAN_COMPILE="0",  # eager DiSAN: no compile time in tests
        RENDITION_TRANSLATOR_PATH=str(model_dirs["translator"]),
        RENDITION_ENCODER_PATH=str(model_dirs["encoder"]),
        RENDITION_DEFAULT_MAX_LENGTH="8",  # random models run to max_length ...
        RENDITION_TRUNCATE_TRANSLATIONS="1",  # ... so their cut outputs are returned (flagged), not refused
        RENDITION_DEFAULT_BEAM_SIZE="2",
        RENDITION_COMPUTE_TYPE="float32",  # the tests' reference translators are float32 (auto would be int8 here)
        RENDITION_ENCODER_COMPUTE_TYPE="float32",  # likewise their reference encoders
    )
    env.update({f"RENDITION_{k.upper()}": str(v) for k, v in overrides.items()})
    return env


@pytest.fixture(scope="module")
def start_server(model_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    """Factory: start_server(**settings) -> a ready Server; all are stopped after the module."""
    servers: list[Server] = []

    def start(wait: bool = True, **overrides: object) -> Server:
        srv = Server(server_env(model_dirs, **overrides), tmp_path_factory.mktemp("server") / "server.log")
        servers.append(srv)
        return srv.wait_ready() if wait else srv

    yield start
    for srv in servers:  # signal all first: they shut down in parallel
        if srv.proc.poll() is None:
            srv.proc.send_signal(signal.SIGTERM)
    for srv in servers:
        srv.stop()
