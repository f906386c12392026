"""Training checkpoints without pickle, shared by the translator's training (``train``) and the
encoder's distillation (``distill``): a model's weights, its optimiser's state and, when kept,
averaged weights as safetensors; everything else (counters, clock, configuration, random state, the
optimiser's hyper-parameters) as JSON metadata.  Written to a temporary file and renamed, so a run
killed while saving keeps its previous checkpoint."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file


@dataclass
class Checkpoint:
    meta: dict[str, Any]  # what the run saved beside the tensors
    model: dict[str, torch.Tensor]  # the model's state dict
    optimizer: dict[str, Any]  # the optimiser's state dict (``Optimizer.load_state_dict``)
    average: dict[str, torch.Tensor] = field(default_factory=dict)  # averaged weights, if the run keeps them


def save_checkpoint(
    path: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, meta: Mapping[str, Any], average: Mapping[str, torch.Tensor] | None = None
) -> None:
    """``model``'s weights (``model.*``), ``opt``'s state (``opt.<index>.<name>``) and ``average``
    (``average.*``) as tensors; ``meta`` and the optimiser's parameter groups as JSON."""
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    tensors |= {f"average.{k}": v.detach().cpu().contiguous() for k, v in (average or {}).items()}
    osd = opt.state_dict()
    for i, st in osd["state"].items():
        tensors |= {f"opt.{i}.{k}": (v if torch.is_tensor(v) else torch.tensor(v)).cpu().contiguous() for k, v in st.items()}
    tmp = path.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata={"meta": json.dumps({**meta, "param_groups": osd["param_groups"]})})
    os.replace(tmp, path)


def load_checkpoint(path: Path) -> Checkpoint:
    """What ``save_checkpoint`` wrote at ``path``."""
    with safe_open(str(path), "pt") as f:
        stored = f.metadata() or {}
    if "meta" not in stored:
        raise ValueError(f"{path} is not a checkpoint of this version (no 'meta' metadata): start the run again")
    meta = json.loads(stored["meta"])
    tensors = load_file(str(path))
    state: dict[int, dict[str, torch.Tensor]] = {}
    for k, v in tensors.items():
        if k.startswith("opt."):
            _, i, name = k.split(".", 2)
            state.setdefault(int(i), {})[name] = v
    optimizer = {"state": state, "param_groups": meta.pop("param_groups")}
    return Checkpoint(meta, _prefixed(tensors, "model."), optimizer, _prefixed(tensors, "average."))


def average_checkpoints(paths: Sequence[Path]) -> dict[str, torch.Tensor]:
    """The mean of the model weights of the checkpoints at ``paths`` (float32)."""
    avg: dict[str, torch.Tensor] = {}
    for p in paths:
        for k, v in _prefixed(load_file(str(p)), "model.").items():
            avg[k] = avg[k] + v.float() / len(paths) if k in avg else v.float() / len(paths)
    return avg


def _prefixed(tensors: Mapping[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}
