"""The code's shape: no function or method in ``model/`` or ``service/`` longer than 100 lines
(from its ``def`` to its last line, docstring and comments included)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 100


def function_lengths(root: Path = ROOT) -> dict[str, int]:
    """``path:qualified.name`` -> lines, for every function and method under model/ and service/."""
    out: dict[str, int] = {}
    for path in sorted(p for pkg in ("model", "service") for p in (root / pkg).rglob("*.py")):
        rel = path.relative_to(root).as_posix()

        def visit(node: ast.AST, prefix: str, rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        out[f"{rel}:{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                    visit(child, name + ".")
                else:
                    visit(child, prefix)

        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), "")
    return out


LENGTHS = function_lengths()


def test_the_functions_are_read() -> None:
    assert LENGTHS["model/training/train.py:train"] > 5
    assert "service/metrics.py:Metrics.__init__" in LENGTHS
    assert "model/training/distill.py:Distillation.run" in LENGTHS  # (methods, by their class)


def test_no_function_is_over_100_lines() -> None:
    long = {name: n for name, n in LENGTHS.items() if n > MAX_LINES}
    assert not long, "split by meaning (parsing, setup, the loop, evaluation, export):\n" + "\n".join(
        f"{name}: {n} lines" for name, n in sorted(long.items(), key=lambda kv: -kv[1])
    )


def test_a_long_function_is_caught(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "service").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "model" / "m.py").write_text(f"class C:\n    def long(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n")
    (tmp_path / "service" / "s.py").write_text(f"def short():\n{body[: body.index(chr(10))]}\n")
    got = function_lengths(tmp_path)
    assert got == {"model/m.py:C.long": MAX_LINES + 1, "service/s.py:short": 2}
