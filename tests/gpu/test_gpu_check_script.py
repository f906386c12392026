"""scripts/gpu-check.sh parses and every step's pieces exist (its --dry-run), on any machine."""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_dry_run(tmp_path: Path) -> None:
    # a GPU machine has the libraries but not this package installed: a Python that skips the
    # site hooks (so no editable-install finder) and sees the site-packages folders only as paths
    python = tmp_path / "python"
    dirs = ":".join(site.getsitepackages())
    python.write_text(f'#!/bin/sh\nPYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{dirs}" exec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "PYTHON": str(python), "OUT": str(tmp_path / "out")}
    r = subprocess.run([str(ROOT / "scripts" / "gpu-check.sh"), "--dry-run"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dry run passed" in (tmp_path / "out" / "steps.txt").read_text()
    assert re.search(r"\b[1-9]\d*(/\d+)? tests collected", r.stdout), r.stdout  # the GPU tests exist and import
    assert f"rendition.model from {ROOT / 'model'}" in r.stdout, r.stdout  # this checkout's code, in place
