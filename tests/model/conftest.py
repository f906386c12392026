"""Fixtures shared by the model tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rendition.model.kernels import native
from rendition.model.translation.translator import Translator
from tests.model.native_variants import load_variant


@pytest.fixture
def set_kernel(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """set_kernel(switch, value): set a C kernel's environment switch (``auto`` or ``0``): the next
    use takes the kernel or the torch path; undone after the test."""

    def set_(switch: str, value: str) -> None:
        monkeypatch.setenv(switch, value)

    return set_


@pytest.fixture
def need_kernel() -> Callable[[str], object]:
    """need_kernel(switch): the native library with that kernel on; a test that needs it is
    skipped where it is missing, and fails under ``RENDITION_REQUIRE_NATIVE=1``."""

    def need(switch: str) -> object:
        lib = native.kernel(switch)  # (raises under RENDITION_REQUIRE_NATIVE=1 when it does not load)
        if lib is None:
            if native.required():
                pytest.fail(f"native kernel unavailable ({switch}) and RENDITION_REQUIRE_NATIVE=1")
            pytest.skip(f"native kernels not built ({switch})")
        return lib

    return need


@pytest.fixture(params=[isa for isa in native.ISAS if isa != "generic"])
def int8_variant(request, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each variant of the native kernels that runs int8 (the generic one stands for a CPU without
    VNNI or AVX2), in turn, where this CPU runs it."""
    return load_variant(request.param, monkeypatch)


SHIPPED_TEXTS = [
    "Utilities for managing disk partitions",
    "This package contains the documentation.",
    "A small, fast and secure web server with support for virtual hosts, CGI scripts and access logs",
    "Python bindings",
    "The library is used by many programs to read configuration files.",
]


@pytest.fixture(scope="module")
def shipped_batch() -> tuple[Translator, list[list[int]]]:
    """The shipped translator and an en->fr batch of sentences of different lengths (token ids)."""
    tr = Translator.from_pretrained(device="cpu")
    return tr, tr.preprocess(SHIPPED_TEXTS, "fr")
