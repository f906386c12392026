"""The packages' import graph: ``model`` never imports ``service``, and no module imports itself
back through others (every import counts, those inside functions too)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    """The installed name: model/x.py is ``rendition.model.x`` (setup.py maps the folders)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return "rendition." + ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def typing_only(tree: ast.AST) -> set[int]:
    """The ids of the nodes under ``if TYPE_CHECKING:`` (imports for the type checker, never run)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING":
            inside |= {id(n) for part in node.body for n in ast.walk(part)}
    return inside


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports when it runs (``from pkg import mod`` names the
    submodule; imports under ``if TYPE_CHECKING:`` are the type checker's, not counted)."""
    files = [p for pkg in ("model", "service") for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        tree = ast.parse(path.read_text(), str(path))
        skip = typing_only(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            else:
                continue
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name and not name.startswith(t + "."):  # (a package's own __init__)
                    deps.add(t)
        graph[name] = deps
    return graph


GRAPH = import_graph()


def test_the_graph_is_read() -> None:
    assert "rendition.model.translation.search" in GRAPH["rendition.model.translation.translator"]
    assert "rendition.model.cli" in GRAPH["rendition.service.cli"]
    # (attention.py imports the transformer's layer types for the type checker only)
    assert "rendition.model.translation.transformer" not in GRAPH["rendition.model.kernels.attention"]


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("rendition.model")))
def test_model_does_not_import_service(module: str) -> None:
    assert not {d for d in GRAPH[module] if d.startswith("rendition.service")}


def test_every_import_of_the_project_names_the_installed_package() -> None:
    """``import model`` / ``from service.x import y`` would load a second copy of a module (or a
    user's own ``model``): the project imports itself as ``rendition.model`` / ``rendition.service``."""
    bad = []
    for path in [*ROOT.glob("model/**/*.py"), *ROOT.glob("service/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("scripts/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []
            bad += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in ("model", "service")]
    assert not bad, "\n".join(bad)


def test_the_installed_distribution_has_no_top_level_model_or_service(tmp_path: Path) -> None:
    """Outside the repository, ``model`` and ``service`` are not importable; ``rendition.*`` is."""
    code = ("import importlib.util as u; assert u.find_spec('model') is None and u.find_spec('service') is None;"
            "import rendition.model.translation.translator, rendition.service.app; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(GRAPH[m]):
            if state.get(d) == 1:
                cycles.append(path[path.index(d) :] + [d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


ROUTERS = sorted(m for m in GRAPH if m.startswith("rendition.service.routers."))


def test_the_routers_are_read() -> None:
    assert {"rendition.service.routers.translate", "rendition.service.routers.files", "rendition.service.routers.tei"} <= set(ROUTERS)
    assert "rendition.service.translation" in GRAPH["rendition.service.routers.files"]


@pytest.mark.parametrize("module", ROUTERS)
def test_a_router_imports_no_other_router(module: str) -> None:
    """What routers share lives in modules they import (``rendition.service.translation``,
    ``rendition.service.embedding``, ``rendition.service.deps``), never in another router."""
    others = {d for d in GRAPH[module] if d.startswith("rendition.service.routers") and d != module}
    assert not others, f"{module} imports {sorted(others)}"


def imported_by(module: str) -> set[str]:
    """Every project module ``module`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for d in GRAPH[todo.pop()] - seen:
            seen.add(d)
            todo.append(d)
    return seen


BUILD_TIME = ("rendition.model.training", "rendition.model.export")  # training, and what is built from a trained model


def test_the_build_time_packages_are_read() -> None:
    assert "rendition.model.training.corpus.rows" in GRAPH["rendition.model.export.shortlist"]
    assert "rendition.model.training.checkpoints" in GRAPH["rendition.model.training.distill"]


@pytest.mark.parametrize("module", ["rendition.service.main", "rendition.service.app", "rendition.service.cli"])
def test_serving_imports_neither_training_nor_the_export_tools(module: str) -> None:
    """``rendition serve`` (``rendition.service.main``, the app it builds, the command that starts it)
    never imports training code or the export tools, not even inside a function."""
    assert not {m for m in imported_by(module) if m.startswith(BUILD_TIME)}


def test_serve_loads_neither_training_nor_the_export_tools() -> None:
    """The same, at run time: what importing the service's entry point and app loads."""
    code = ("import sys, rendition.service.cli, rendition.service.main, rendition.service.app;"
            f"print(sorted(m for m in sys.modules if m.startswith({BUILD_TIME!r})))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
