"""GPU tests run only when asked for (``pytest -m gpu``): elsewhere they are deselected, not skipped."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "gpu" in (config.option.markexpr or ""):
        return
    gpu = [i for i in items if i.get_closest_marker("gpu")]
    if gpu:
        config.hook.pytest_deselected(items=gpu)
        items[:] = [i for i in items if not i.get_closest_marker("gpu")]
