"""Safe weight loading (safetensors only, never pickle) with clear errors, and device choice."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
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


def load_pretrained(model_cls: type[nn.Module], config_cls: type[JsonConfig], path: Path, device: str, dtype) -> nn.Module:
    """config.json + model.safetensors in ``path`` -> model on the device (and dtype) asked for."""
    model = model_cls(config_cls.load(path / "config.json"))
    load_weights(model, path / "model.safetensors")
    model.to(resolve_device(device))
    if dtype is not None:
        model.to(dtype=getattr(torch, dtype) if isinstance(dtype, str) else dtype)
    return model
