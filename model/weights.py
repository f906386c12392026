"""Safe weight loading (safetensors only, never pickle) with clear errors, and device choice."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn


class ModelLoadError(RuntimeError):
    pass


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
    own = model.state_dict()
    missing = sorted(set(own) - set(tensors))
    unexpected = sorted(set(tensors) - set(own))
    if missing or unexpected:
        raise ModelLoadError(f"{path}: missing tensors {missing[:5]}, unexpected tensors {unexpected[:5]}")
    bad = [f"{k}: file {tuple(v.shape)} vs model {tuple(own[k].shape)}" for k, v in tensors.items() if v.shape != own[k].shape]
    if bad:
        raise ModelLoadError(f"{path}: wrong shapes for config: {bad[:5]}")
    model.load_state_dict({k: v.to(own[k].dtype) for k, v in tensors.items()})
