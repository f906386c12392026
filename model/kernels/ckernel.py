"""Small C kernels for the CPU hot loops, built once with the system C compiler and called via ctypes.

The sources have no torch headers, so a build takes about a second; the shared object is cached
under ``RENDITION_KERNEL_DIR`` (default ``~/.cache/rendition``) by a hash of the source, flags
and machine.  A kernel that cannot be built (no compiler, no OpenMP, read-only cache) is
reported once as a warning and ``load`` returns None: every caller keeps a plain PyTorch path.
Each kernel has an environment switch (``RENDITION_<NAME>_KERNEL=0``) that turns it off.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import warnings
from pathlib import Path

C_FLAGS = ["-O3", "-march=native", "-ffast-math", "-fopenmp", "-shared", "-fPIC"]
_LOADED: dict[str, ctypes.CDLL | None] = {}


def enabled(switch: str) -> bool:
    return os.environ.get(switch, "auto").lower() not in ("0", "false", "no", "off")


def load(name: str, source: str, switch: str) -> ctypes.CDLL | None:
    """The compiled library for ``source`` (cached per process and on disk), or None."""
    if name in _LOADED:
        return _LOADED[name]
    lib = None
    if enabled(switch):
        try:
            lib = ctypes.CDLL(str(_build(name, source)))
        except Exception as e:  # the torch paths still work
            warnings.warn(f"{name} C kernel unavailable ({type(e).__name__}: {e}); using the torch path", stacklevel=3)
    _LOADED[name] = lib
    return lib


def _build(name: str, source: str) -> Path:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise RuntimeError("no C compiler on PATH")
    key = hashlib.sha256((source + " ".join(C_FLAGS) + platform.node() + platform.machine()).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("RENDITION_KERNEL_DIR", Path.home() / ".cache" / "rendition"))
    lib = cache / f"{name}_{key}.so"
    if lib.is_file():
        return lib
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"{name}.c"
        src.write_text(source)
        out = Path(tmp) / f"{name}.so"
        subprocess.run([cc, *C_FLAGS, str(src), "-o", str(out), "-lm"], check=True, capture_output=True, timeout=120)
        tmp_lib = cache / f".{lib.name}.{os.getpid()}"
        shutil.copy(out, tmp_lib)
        os.replace(tmp_lib, lib)  # atomic: concurrent workers never load a half-written file
    return lib
