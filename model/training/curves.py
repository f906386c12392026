"""Training curves as a PNG (matplotlib, no display), shared by the translator's training and the
encoder's distillation: panels side by side, each a few lines over the run's steps or examples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Line:
    x: Sequence[float]
    y: Sequence[float]
    label: str | None = None
    fmt: str = "-"  # matplotlib's format string
    style: dict[str, Any] = field(default_factory=dict)  # more keyword arguments of ``Axes.plot``


@dataclass
class Panel:
    lines: list[Line]
    xlabel: str
    ylabel: str
    title: str = ""
    log_y: bool = False
    legend: bool = True


def plot_curves(path: Path, panels: Sequence[Panel], title: str = "") -> None:
    """Draw ``panels`` side by side into the PNG at ``path`` (its folder made if missing)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(11, 4), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for line in panel.lines:
            ax.plot(line.x, line.y, line.fmt, label=line.label, **line.style)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        if panel.log_y:
            ax.set_yscale("log")
        if panel.title:
            ax.set_title(panel.title)
        if panel.legend:
            ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
