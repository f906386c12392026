"""The packages' import graph: ``model`` never imports ``service``, and no module imports itself
back through others (every import counts, those inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (``from pkg import mod`` names the submodule)."""
    files = [p for pkg in ("model", "service") for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
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
    assert "model.translation.search" in GRAPH["model.translation.translator"]
    assert "model.cli" in GRAPH["service.cli"]


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m.startswith("model")))
def test_model_does_not_import_service(module: str) -> None:
    assert not {d for d in GRAPH[module] if d.split(".")[0] == "service"}


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


ROUTERS = sorted(m for m in GRAPH if m.startswith("service.routers."))


def test_the_routers_are_read() -> None:
    assert {"service.routers.translate", "service.routers.files", "service.routers.tei"} <= set(ROUTERS)
    assert "service.translation" in GRAPH["service.routers.files"]


@pytest.mark.parametrize("module", ROUTERS)
def test_a_router_imports_no_other_router(module: str) -> None:
    """What routers share lives in modules they import (``service.translation``,
    ``service.embedding``, ``service.deps``), never in another router."""
    others = {d for d in GRAPH[module] if d.startswith("service.routers") and d != module}
    assert not others, f"{module} imports {sorted(others)}"
