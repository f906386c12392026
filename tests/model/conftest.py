"""Fixtures shared by the model tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from model import ckernel


@pytest.fixture
def set_kernel(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """set_kernel(switch, value): set a C kernel's environment switch (``auto`` or ``0``) and forget
    the loaded kernels, so the next use loads it again or takes the torch path; undone after the test."""

    def set_(switch: str, value: str) -> None:
        monkeypatch.setenv(switch, value)
        monkeypatch.setattr(ckernel, "_LOADED", {})

    return set_
