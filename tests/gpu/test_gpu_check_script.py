"""scripts/gpu-check.sh parses and every step's pieces exist (its --dry-run), on any machine."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_dry_run(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(tmp_path)}
    r = subprocess.run([str(ROOT / "scripts" / "gpu-check.sh"), "--dry-run"], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dry run passed" in (tmp_path / "steps.txt").read_text()
    assert re.search(r"\b[1-9]\d*(/\d+)? tests collected", r.stdout), r.stdout  # the GPU tests exist and import
