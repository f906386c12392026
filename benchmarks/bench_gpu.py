"""Translation on one CUDA GPU: ours (the torch back end, float16) beside CTranslate2 (float16) on the
same GPU, the same sentences and the same decoding options, with BLEU beside each row.

    python benchmarks/bench_gpu.py [--n 1000] [--rounds 2] [--output results.json]
    python benchmarks/bench_gpu.py --dry-run      # any machine: checks imports, files and options

Workload: the first ``--n`` sentences of the DDTP test split (``data/splits/test.en-fr.tsv``) en→fr
and of the everyday test split, beam 4, length penalty 0, ``max_length`` 256, each engine through the
same ``Translator.translate`` (CTranslate2 through ``CT2Translator``, so pre- and post-processing are
shared).  Each configuration runs ``--rounds`` times after one warm-up batch; its best round is
reported as output tokens per second (best hypothesis's tokens plus one ``</s>`` per sentence).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPLITS = ROOT / "data" / "splits"
SETS = {"ddtp": SPLITS / "test.en-fr.tsv", "everyday": SPLITS / "test.everyday.en-fr.tsv"}


def _sentences(path: Path, n: int) -> tuple[list[str], list[str]]:
    rows = [line.rstrip("\n").split("\t", 1) for line in path.open(encoding="utf-8")][:n]
    return [r[0] for r in rows], [r[1] for r in rows]


def _run(translator, sources: list[str], rounds: int, batch: int) -> tuple[float, list[str]]:
    import torch

    translator.translate(sources[:batch], "en", "fr", beam_size=4, length_penalty=0.0)  # warm-up
    best, texts = 0.0, []
    for _ in range(rounds):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = []
        for i in range(0, len(sources), batch):
            out += translator.translate(sources[i : i + batch], "en", "fr", beam_size=4, length_penalty=0.0)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        tokens = sum(len(t.tokens) + 1 for t in out)
        best = max(best, tokens / dt)
        texts = [t.text for t in out]
    return best, texts


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch", type=int, default=64, help="sentences per translate call")
    p.add_argument("--output", type=Path)
    p.add_argument("--dry-run", action="store_true", help="check imports, files and options; run nothing on a GPU")
    a = p.parse_args(argv)

    import sacrebleu

    from rendition.model.export.ct2 import CT2Translator, export_ct2
    from rendition.model.translation.translator import DEFAULT_TRANSLATOR, Translator

    for path in (*SETS.values(), DEFAULT_TRANSLATOR / "model.safetensors"):
        if not path.is_file():
            raise SystemExit(f"missing {path}")
    if a.dry_run:
        print(json.dumps({"dry_run": True, "sets": {k: str(v) for k, v in SETS.items()}, "n": a.n, "rounds": a.rounds}))
        return {}

    import ctranslate2
    import torch

    if not torch.cuda.is_available() or ctranslate2.get_cuda_device_count() < 1:
        raise SystemExit("no CUDA device visible to torch and CTranslate2")
    results: dict = {"device": torch.cuda.get_device_name(0), "n": a.n, "rounds": a.rounds, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        ct2_dir = export_ct2(DEFAULT_TRANSLATOR, Path(tmp) / "ct2")
        engines = {
            "rendition float16 (torch back end)": lambda: Translator.from_pretrained(device="cuda", dtype="float16"),
            "CTranslate2 float16": lambda: CT2Translator.from_pretrained(ct2_dir, device="cuda", compute_type="float16"),
        }
        for set_name, path in SETS.items():
            sources, refs = _sentences(path, a.n)
            for name, make in engines.items():
                tr = make()
                tok_s, hyps = _run(tr, sources, a.rounds, a.batch)
                bleu = sacrebleu.corpus_bleu(hyps, [refs[: len(hyps)]]).score
                row = {"set": set_name, "engine": name, "tokens_per_s": round(tok_s, 1), "bleu": round(bleu, 2)}
                results["rows"].append(row)
                print(f"{set_name:9s} {name:38s} {tok_s:10.1f} tokens/s  BLEU {bleu:5.2f}", flush=True)
                del tr
                torch.cuda.empty_cache()
    if a.output:
        a.output.write_text(json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main()
