"""``benchmarks/queue_bound.py``'s ideal servers against queueing theory."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import queue_bound as qb  # noqa: E402

WORK = np.array([0.5, 1.0, 1.0, 2.0, 4.0])  # sentences' work, the median one = 1


@pytest.mark.parametrize("load", [0.3, 0.6])
def test_one_worker_processor_sharing_has_the_mg1_ps_mean(load: float) -> None:
    """M/G/1 processor sharing: mean response time E[S] / (1 - rho) whatever the work's distribution
    (Kleinrock); G = 1 with one worker is exactly that server."""
    lat = qb.processor_sharing(WORK, load, workers=1, speed=qb.flat(1.0), n=60000, in_flight=1)
    assert lat.mean() == pytest.approx(WORK.mean() / (1 - load), rel=0.05)


def test_first_come_first_served_has_the_pollaczek_khinchine_mean() -> None:
    """M/G/1 FCFS: mean response time E[S] + rho E[S^2] / (2 E[S] (1 - rho))."""
    load = 0.6
    lat = qb.first_come_first_served(WORK, load, workers=1, n=60000)
    expected = WORK.mean() + load * (WORK**2).mean() / (2 * WORK.mean() * (1 - load))
    assert lat.mean() == pytest.approx(expected, rel=0.05)


def test_affine_step_cost() -> None:
    """A step with k sentences takes a + b k: each runs at (a + b) / (a + b k) of its speed alone,
    or alone_ms / (a + b k) when a step alone is measured apart (the other workers idle)."""
    speed = qb.affine(6.0, 2.0)
    assert speed(1) == 1.0 and speed(3) == pytest.approx(8 / 12)
    assert qb.affine(6.0, 2.0, alone_ms=7.0)(1) == pytest.approx(7 / 8)
    # Nearly idle, a sentence takes its own work: the median one 1 unit.
    lat = qb.processor_sharing(WORK, 0.01, workers=2, speed=speed, n=4000)
    assert np.median(lat) == pytest.approx(1.0, rel=0.02)
