"""Safe weight loading (safetensors only, never pickle) with clear errors, and device choice.

A 2-D weight may be stored as int8 rows with one float32 scale per row (``quantize_rows``): the file
holds ``<name>`` (int8) and ``<name>.row_scale``, and ``load_weights`` restores ``q * scale``.
``SentenceEncoder.save_pretrained`` stores the token-embedding table this way (half the bytes of fp16).
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import asdict, fields
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn


def shipped_model(name: str) -> Path:
    """The directory of a model shipped in the package (``pretrained/<name>``), found through the
    installed package ``rendition.model`` (its package data), never through the source tree."""
    return Path(str(resources.files("rendition.model") / "pretrained" / name))


ROW_SCALE = ".row_scale"  # suffix of the per-row scales that go with an int8-stored weight


class ModelLoadError(RuntimeError):
    pass


def quantize_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row int8: ``w ~= q * scale[:, None]`` with ``|q| <= 127`` and ``scale = max|row| / 127``,
    so each element is off by at most half its row's scale.  (rows, cols) -> int8 (rows, cols), float32 (rows,)."""
    w = w.detach().float()
    scale = w.abs().amax(dim=1) / 127
    q = torch.round(w / scale.clamp_min(torch.finfo(torch.float32).tiny)[:, None]).clamp(-127, 127)
    return q.to(torch.int8), scale


def save_weights(state: dict[str, torch.Tensor], path: Path, dtype: torch.dtype, int8_rows: tuple[str, ...] = ()) -> None:
    """Write ``state`` as safetensors in ``dtype``; the weights named in ``int8_rows`` as int8 rows + scales."""
    out = {}
    for k, v in state.items():
        if k in int8_rows:
            out[k], out[k + ROW_SCALE] = quantize_rows(v)
        else:
            out[k] = v.detach().to("cpu", dtype).contiguous()
    save_file(out, str(path))


def _dequantize(tensors: dict[str, torch.Tensor], path: Path) -> dict[str, torch.Tensor]:
    """Turn every int8 weight and its ``.row_scale`` back into float32 rows; a half pair is an error."""
    for key in [k for k in tensors if k.endswith(ROW_SCALE)]:
        name, scale = key[: -len(ROW_SCALE)], tensors.pop(key)
        q = tensors.get(name)
        if q is None or q.dtype != torch.int8 or q.dim() != 2 or scale.shape != (q.shape[0],):
            raise ModelLoadError(f"{path}: {key} {tuple(scale.shape)} does not scale the rows of an int8 matrix {name}")
        tensors[name] = q.float() * scale.float()[:, None]
    raw = sorted(k for k, v in tensors.items() if v.dtype == torch.int8)
    if raw:
        raise ModelLoadError(f"{path}: int8 tensors without their {ROW_SCALE}: {raw[:5]}")
    return tensors


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("device 'cuda' requested but CUDA is not available")
    return dev


def load_weights(model: nn.Module, path: Path) -> None:
    """Load a safetensors file into ``model``; missing, truncated or mis-shaped files raise ModelLoadError."""
    path = Path(path)
    if not path.is_file():
        raise ModelLoadError(f"weights file not found: {path}")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as e:
        raise ModelLoadError(f"cannot read weights {path}: {e}") from e
    tensors = _dequantize(tensors, path)
    own = model.state_dict()
    missing = sorted(set(own) - set(tensors))
    unexpected = sorted(set(tensors) - set(own))
    if missing or unexpected:
        raise ModelLoadError(f"{path}: missing tensors {missing[:5]}, unexpected tensors {unexpected[:5]}")
    bad = [f"{k}: file {tuple(v.shape)} vs model {tuple(own[k].shape)}" for k, v in tensors.items() if v.shape != own[k].shape]
    if bad:
        raise ModelLoadError(f"{path}: wrong shapes for config: {bad[:5]}")
    with torch.no_grad():  # in place, converting to the model's dtype: no second copy of the weights at once
        for k, v in tensors.items():
            own[k].copy_(v)


class JsonConfig:
    """Mixin for frozen dataclass configs stored as ``config.json`` (lists come back as tuples)."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)  # type: ignore[call-overload]

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | Path):
        raw = json.loads(Path(path).read_text())
        unknown = set(raw) - {f.name for f in fields(cls)}  # type: ignore[arg-type]
        if unknown:
            raise ValueError(f"{path}: unknown config keys {sorted(unknown)}")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()})


def release_freed_memory() -> bool:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): memory a load
    allocated and freed (conversions, the float32 weights the int8 tables replace) otherwise stays
    resident, glibc returning only the free space at the top of its heap.  False where there is
    no glibc (nothing to do)."""
    global _MALLOC_TRIM
    if _MALLOC_TRIM is None:
        try:
            _MALLOC_TRIM = ctypes.CDLL(None).malloc_trim
            _MALLOC_TRIM.argtypes, _MALLOC_TRIM.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError, TypeError):
            _MALLOC_TRIM = False
    if not _MALLOC_TRIM:
        return False
    _MALLOC_TRIM(0)
    return True


_MALLOC_TRIM: Any = None  # glibc's malloc_trim once looked up; False: not there


def release_rows(t: torch.Tensor, first: int, end: int) -> None:
    """Hand back to the system the memory pages lying wholly inside rows ``first`` .. ``end - 1``
    (the first dimension) of the contiguous CPU tensor ``t`` (``madvise(MADV_DONTNEED)``): the
    storage stays reserved, its pages are no longer resident, and they read as zeros once touched
    again.  For storage a finished sentence held inside a buffer kept for the next ones.  Nothing
    where the pages cannot be released (another device or system)."""
    global _MADVISE
    if _MADVISE is None:
        try:
            _MADVISE = ctypes.CDLL(None).madvise
            _MADVISE.argtypes, _MADVISE.restype = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int], ctypes.c_int
        except (OSError, AttributeError):
            _MADVISE = False
    if not _MADVISE or t.device.type != "cpu" or end <= first or not t.is_contiguous():
        return
    row = t[0].numel() * t.element_size()
    lo, hi = t.data_ptr() + first * row, t.data_ptr() + end * row
    lo = -(-lo // _PAGE) * _PAGE  # (whole pages only: the rows around keep theirs)
    hi = hi // _PAGE * _PAGE
    if hi > lo:
        _MADVISE(lo, hi - lo, _MADV_DONTNEED)


_MADVISE: Any = None  # the C library's madvise once looked up; False: not there
_MADV_DONTNEED = 4  # (Linux)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

# glibc's malloc settings for a long-running process (mallopt's parameters: value, and the environment
# variable that sets it at start-up and then takes precedence): two arenas at most, instead of eight
# per core, each keeping its own free space.  glibc keeps its own mmap threshold (a fixed one maps
# every step's large blocks anew and faults their pages in); what a batch freed inside the heap goes
# back to the system when the batch or an idle worker is done (``release_freed_memory``).
# docs/benchmarks.md has the measurements.
M_ARENA_MAX = -8
MALLOC_SETTINGS = {M_ARENA_MAX: (2, "MALLOC_ARENA_MAX")}


def bound_c_heap() -> bool:
    """Apply ``MALLOC_SETTINGS`` to glibc's allocator (``mallopt``), each unless its environment
    variable is set (the operator's choice stands).  Called before a model loads and when the
    service starts, so that ``rendition serve`` and the library get them without a wrapper script.
    False where there is no glibc (another C library, or an allocator preloaded in its place, keeps
    its own policy)."""
    try:
        libc = ctypes.CDLL(None)
        mallopt, _ = libc.mallopt, libc.gnu_get_libc_version
    except (OSError, AttributeError):
        return False
    if os.environ.get("LD_PRELOAD"):  # (jemalloc, mimalloc... replace malloc: mallopt would set glibc's, unused)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    for param, (value, env) in MALLOC_SETTINGS.items():
        if env not in os.environ:
            mallopt(param, value)
    return True


ModelT = TypeVar("ModelT", bound=nn.Module)


def load_pretrained(model_cls: type[ModelT], config_cls: type[JsonConfig], path: Path, device: str, dtype) -> ModelT:
    """config.json + model.safetensors in ``path`` -> model on the device (and dtype) asked for."""
    model = model_cls(config_cls.load(path / "config.json"))
    load_weights(model, path / "model.safetensors")
    model.to(resolve_device(device))
    if dtype is not None:
        model.to(dtype=getattr(torch, dtype) if isinstance(dtype, str) else dtype)
    return model
