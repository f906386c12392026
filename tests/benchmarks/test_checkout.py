"""``benchmarks/checkout.py``: a benchmark's ``--root DIR`` server imports that checkout's tree,
not the tree this interpreter's editable install names."""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from checkout import ROOT, tree_env  # noqa: E402


def where(env: dict[str, str], cwd: Path) -> str:
    code = "import rendition.service.main as m, rendition.model.weights as w; print(m.__file__, w.__file__)"
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_another_checkout_runs_its_own_tree(tmp_path: Path) -> None:
    other = tmp_path / "old-checkout"
    for sub in ("model", "service"):
        (other / sub).mkdir(parents=True)
    (other / "service" / "main.py").write_text("")
    (other / "model" / "weights.py").write_text("")
    env = dict(os.environ)
    assert str(other) not in where(env, other)  # (what --root ran before: the installed tree)
    got = where(tree_env(other, tmp_path / "scratch", env), other).split()
    assert [Path(p).resolve() for p in got] == [other / "service" / "main.py", other / "model" / "weights.py"]
    assert tree_env(ROOT, tmp_path / "unused", env) == env  # this tree: nothing changes
