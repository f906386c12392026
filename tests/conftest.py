"""Fixtures shared by the test packages."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def msgfmt_check() -> Callable[[Path], subprocess.CompletedProcess]:
    """msgfmt_check(path): GNU gettext's ``msgfmt --check`` on a catalog (skipped where gettext is
    not installed, a failure in CI: scripts/test.sh installs it)."""
    exe = shutil.which("msgfmt")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("msgfmt (GNU gettext) is not installed; scripts/test.sh installs it")
        pytest.skip("msgfmt (GNU gettext) is not installed")

    def check(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run([exe, "--check", "-o", os.devnull, str(path)], capture_output=True, text=True, timeout=60)

    return check
