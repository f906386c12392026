"""Golden outputs of the shipped translator: the cases, how each back end runs them, and the file.

The golden file (``golden_translations.json`` beside this module) freezes the tokens and scores the
shipped model (``model/pretrained/translator``) gives on fixed slices of the committed test splits
(``data/splits/test.*.en-fr.tsv``), both directions, with beam search (1-best and n-best), greedy
search and the options that change the logits.  ``test_golden.py`` checks that the search
reproduces them on every back end this machine can run; a refactoring of the search, the cache or
the options must keep them.

    python tests/model/translation/golden.py     # write the file again (only when outputs may change)

The file holds the native CPU back end's results (``reference``) and, per other back end, only the
cases whose tokens differ from them (``differs``: a near-tie that float noise decides otherwise
there); scores are compared with ``SCORE_TOL``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import torch

from rendition.model.translation.backends import TorchBackend
from rendition.model.translation.translator import Translator

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).with_name("golden_translations.json")
SPLITS = ("dialogue", "dict", "en-fr", "everyday", "help", "ui")  # data/splits/test.<name>.en-fr.tsv ("en-fr": DDTP)
SLICE = 6  # sentences per split and direction
SCORE_TOL = 2e-4  # absolute, on length-normalised log-probabilities (float32 sums in another order)
KERNEL_SWITCHES = ("RENDITION_FUSED_KERNEL", "RENDITION_ATTENTION_KERNEL", "RENDITION_SEARCH_KERNEL")

# name -> (search options, splits, sentences per split); every case runs both directions.
CASES: dict[str, tuple[dict, tuple[str, ...], int]] = {
    "beam4": ({"beam_size": 4}, SPLITS, SLICE),
    "greedy": ({"beam_size": 1}, SPLITS, SLICE),
    "nbest4": ({"beam_size": 4, "num_hypotheses": 4}, ("en-fr", "everyday"), 4),
    "min_length": ({"beam_size": 4, "min_length": 4}, ("dict",), 4),
    "greedy_min_length": ({"beam_size": 1, "min_length": 3}, ("dict",), 4),
    "processors": ({"beam_size": 4, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2}, ("dialogue",), 4),
    "greedy_processors": ({"beam_size": 1, "repetition_penalty": 1.3, "no_repeat_ngram_size": 2}, ("dialogue",), 4),
    "short_cap": ({"beam_size": 4, "max_length": 6, "length_penalty": 0.0}, ("help",), 4),
}


def split_path(name: str) -> Path:
    return ROOT / "data" / "splits" / ("test.en-fr.tsv" if name == "en-fr" else f"test.{name}.en-fr.tsv")


def sentences(name: str, n: int) -> list[tuple[str, str]]:
    """The first n (English, French) pairs of a test split."""
    pairs = []
    with open(split_path(name), encoding="utf-8") as f:
        for line in f:
            en, fr = line.rstrip("\n").split("\t")[:2]
            pairs.append((en, fr))
            if len(pairs) == n:
                break
    return pairs


def inputs(tr: Translator) -> Iterator[tuple[str, dict, list[list[int]]]]:
    """(case key, options, source token ids) for every case, split and direction."""
    for case, (opts, splits, n) in CASES.items():
        for name in splits:
            pairs = sentences(name, n)
            for src, tgt, col in (("en", "fr", 0), ("fr", "en", 1)):
                texts = [p[col] for p in pairs]
                yield f"{case}/{name}/{src}-{tgt}", opts, tr.preprocess(texts, tgt)


@contextlib.contextmanager
def kernels_off() -> Iterator[None]:
    """Every translation kernel switched off (``RENDITION_<NAME>_KERNEL=0``): the torch paths."""
    saved = {k: os.environ.get(k) for k in KERNEL_SWITCHES}
    os.environ.update({k: "0" for k in KERNEL_SWITCHES})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load() -> Translator:
    torch.set_num_threads(1)  # (a team of threads on a busy machine waits for its slowest; one is steadier)
    return Translator.from_pretrained(device="cpu")


def outputs(tr: Translator, run) -> dict[str, list[list]]:
    """Per case key: [[tokens, score], ...] per sentence (n-best flattened in order: [[tokens,
    score], ...] per hypothesis)."""
    out = {}
    for key, opts, ids in inputs(tr):
        out[key] = [[[h.tokens, round(h.score, 6)] for h in hyps] for hyps in run(ids, opts)]
    return out


def write() -> None:
    from test_golden import BACKENDS  # (this directory is on sys.path)

    tr = load()
    ref = outputs(tr, BACKENDS["native"](tr))
    differs = {}
    for name, runner in BACKENDS.items():
        if name == "native":
            continue
        got = outputs(tr, runner(tr))
        differs[name] = {k: v for k, v in got.items() if [[h[0] for h in s] for s in v] != [[h[0] for h in s] for s in ref[k]]}
    data = {
        "model": "model/pretrained/translator",
        "cases": {k: {"options": o, "splits": list(s), "sentences": n} for k, (o, s, n) in CASES.items()},
        "reference": ref,
        "differs": differs,
    }
    GOLDEN.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN} ({sum(len(v) for v in ref.values())} sentences); differing cases: "
          f"{ {k: sorted(v) for k, v in differs.items()} }")


__all__ = ["GOLDEN", "TorchBackend", "kernels_off", "load", "outputs", "write"]

if __name__ == "__main__":
    write()
