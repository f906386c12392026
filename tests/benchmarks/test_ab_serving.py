"""``benchmarks/ab_serving.py``, server variants side by side: a variant's text parses into its
checkout and environment (or a clear error), and a real comparison of two servers started from the
installed package reaches each with its own settings and measures every run."""

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import ab_serving  # noqa: E402
import bench_serving  # noqa: E402

from tests.service.conftest import server_python  # noqa: E402


def test_a_variant_names_its_checkout_and_its_environment(tmp_path: Path) -> None:
    assert ab_serving.parse_variant("base:") == ab_serving.Variant("base", bench_serving.ROOT, {})
    got = ab_serving.parse_variant(f"old@{tmp_path}:RENDITION_WORKER_NICE=5,X=a=b")
    assert got == ab_serving.Variant("old", tmp_path.resolve(), {"RENDITION_WORKER_NICE": "5", "X": "a=b"})


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("base", "colon is missing"),
        (":X=1", "no name"),
        ("a:X", "'X' is not NAME=VALUE"),
        ("a:=1", "is not NAME=VALUE"),
    ],
)
def test_a_malformed_variant_is_refused_with_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        ab_serving.parse_variant(text)


def test_the_command_line_refuses_one_variant_or_two_of_one_name(capsys) -> None:
    for argv in (["a:"], ["a:", "a:X=1"]):
        with pytest.raises(SystemExit):
            ab_serving.main(argv)
        assert "two or more variants" in capsys.readouterr().err


def test_two_servers_are_compared_each_with_its_own_settings() -> None:
    one = "one:RENDITION_TRANSLATION_WORKERS=1,RENDITION_WORKER_THREADS=1"
    variants = [ab_serving.parse_variant("auto:"), ab_serving.parse_variant(one)]
    seen: list[str] = []
    out = ab_serving.compare(variants, rounds=2, n=8, in_flight=4, python=server_python(), echo=seen.append)
    assert [line.split(":")[0] for line in seen] == ["round 1 auto", "round 1 one", "round 2 one", "round 2 auto"]
    assert [run["worker_threads"] for run in out["runs"]["one"]] == [1, 1]  # (the settings reached that server)
    assert all(run["worker_threads"] >= 1 for run in out["runs"]["auto"])
    for name in ("auto", "one"):
        medians = out["medians"][name]
        assert set(medians) == {*ab_serving.FIGURES, "mean_seconds"}
        assert medians["seconds"] > 0 and medians["loop_ms_per_request"] > 0 and medians["client_ms_per_request"] > 0
        assert medians["on_core"] > 0 and not math.isnan(medians["asleep"])
