"""Fixtures shared by the model tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from model.kernels import ckernel
from model.translation.translator import Translator


@pytest.fixture
def set_kernel(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """set_kernel(switch, value): set a C kernel's environment switch (``auto`` or ``0``) and forget
    the loaded kernels, so the next use loads it again or takes the torch path; undone after the test."""

    def set_(switch: str, value: str) -> None:
        monkeypatch.setenv(switch, value)
        monkeypatch.setattr(ckernel, "_LOADED", {})

    return set_


SHIPPED_TEXTS = [
    "Utilities for managing disk partitions",
    "This package contains the documentation.",
    "A small, fast and secure web server with support for virtual hosts, CGI scripts and access logs",
    "Python bindings",
    "The library is used by many programs to read configuration files.",
]


@pytest.fixture(scope="module")
def shipped_batch() -> tuple[Translator, torch.Tensor]:
    """The shipped translator and a padded en->fr batch of sentences of different lengths."""
    tr = Translator.from_pretrained(device="cpu")
    src = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(ids) for ids in tr.preprocess(SHIPPED_TEXTS, "fr")], batch_first=True, padding_value=tr.model.cfg.pad_id
    )
    return tr, src
