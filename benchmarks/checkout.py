"""Another checkout's service in a benchmark (``--root DIR``): the environment that makes
``python -m rendition.service.main`` import that tree.

This interpreter's editable install maps the package ``rendition`` to the tree it was installed
from, whatever the working directory; a folder holding a ``rendition`` package whose ``model`` and
``service`` are links into the other tree, first on ``PYTHONPATH``, takes precedence.  The other
tree's native kernels must have been built in place (``pip install -e`` there, or the .so files of
an identical ``model/kernels/csrc`` copied into its ``model/kernels``).
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree_env(root: Path, scratch: str | Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` for a server of ``root``'s tree (unchanged for this tree); ``scratch`` holds the
    package links and must outlive the server."""
    if root.resolve() == ROOT:
        return env
    shim = Path(scratch) / "tree" / "rendition"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("")
    for sub in ("model", "service"):
        (shim / sub).symlink_to(root.resolve() / sub)
    return env | {"PYTHONPATH": os.pathsep.join(filter(None, [str(shim.parent), env.get("PYTHONPATH")]))}
