"""Weights in and out of a lent GPU machine, whose transfers are capped (64 MiB each way, files of
at most 16 MiB coming back).

    python scripts/gpu_bundle.py pack MODEL_DIR OUT.safetensors     # matrices to int8 (per row), rest as is
    python scripts/gpu_bundle.py unpack IN.safetensors MODEL_DIR    # back to the original dtypes
    python scripts/gpu_bundle.py average RUN_DIR OUT_DIR [--last N] # the run's checkpoints from its last half

``pack`` halves a float16 model: every matrix of at least 4,096 entries is stored as int8 with one
float32 scale per row (symmetric, round to nearest), everything else unchanged.  It is meant for a
training run's starting weights, where a relative error of about 0.5% per weight is gone after the
first steps, not for weights that are shipped.  ``average`` exports (float16, as ``rendition train
--export``) the mean of the kept checkpoints whose step is at least half the run's last step, at
most ``--last`` of them, so that a run cut short by its time limit is not averaged with its start.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

MIN_QUANTISED = 4096


def pack(model_dir: Path, out: Path) -> None:
    tensors = load_file(str(Path(model_dir) / "model.safetensors"))
    packed: dict[str, torch.Tensor] = {}
    dtypes: dict[str, str] = {}
    for name, t in tensors.items():
        dtypes[name] = str(t.dtype).removeprefix("torch.")
        if t.is_floating_point() and t.dim() == 2 and t.numel() >= MIN_QUANTISED:
            w = t.float()
            scale = w.abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 127.0
            packed[f"{name}.q"] = torch.round(w / scale).clamp(-127, 127).to(torch.int8).contiguous()
            packed[f"{name}.scale"] = scale.contiguous()
        else:
            packed[name] = t.contiguous()
    save_file(packed, str(out), metadata={"dtypes": json.dumps(dtypes)})


def unpack(packed_path: Path, model_dir: Path) -> None:
    with safe_open(str(packed_path), "pt") as f:
        dtypes = json.loads(f.metadata()["dtypes"])
    packed = load_file(str(packed_path))
    out = {}
    for name, dtype in dtypes.items():
        if f"{name}.q" in packed:
            out[name] = (packed[f"{name}.q"].float() * packed[f"{name}.scale"]).to(getattr(torch, dtype))
        else:
            out[name] = packed[name]
    Path(model_dir).mkdir(parents=True, exist_ok=True)
    save_file(out, str(Path(model_dir) / "model.safetensors"))


def average(run_dir: Path, out_dir: Path, last: int) -> list[str]:
    from rendition.model.training.train import export

    run_dir, out_dir = Path(run_dir), Path(out_dir)
    steps = sorted(int(p.stem.split("_")[1]) for p in run_dir.glob("checkpoint_[0-9]*.safetensors"))
    if not steps:
        raise SystemExit(f"no checkpoints in {run_dir}")
    chosen = [s for s in steps if s >= steps[-1] / 2][-last:]  # the newest ones: rendition train's export of the last n
    export(run_dir, out_dir, last_n=len(chosen))
    (out_dir / "averaged.json").write_text(json.dumps({"steps": chosen}) + "\n")
    return [str(s) for s in chosen]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("model_dir", type=Path)
    p.add_argument("out", type=Path)
    u = sub.add_parser("unpack")
    u.add_argument("packed", type=Path)
    u.add_argument("model_dir", type=Path)
    a = sub.add_parser("average")
    a.add_argument("run_dir", type=Path)
    a.add_argument("out_dir", type=Path)
    a.add_argument("--last", type=int, default=6)
    args = ap.parse_args()
    if args.cmd == "pack":
        pack(args.model_dir, args.out)
    elif args.cmd == "unpack":
        unpack(args.packed, args.model_dir)
    else:
        print("averaged checkpoints:", ", ".join(average(args.run_dir, args.out_dir, args.last)))


if __name__ == "__main__":
    main()
