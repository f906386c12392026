"""The search reproduces the golden outputs of the shipped translator on every back end this
machine runs (``golden.py`` says what the cases are and how the file was made): tokens exactly,
scores within ``SCORE_TOL``.

Back ends: ``native`` (the back end ``Translator`` chooses here: the fused C kernels over a
by-reference cache), ``torch`` (every kernel switched off: the reference ``Transformer`` and the
torch search), and ``pool`` (the same with sentences joining a continuous search one after the
other, over a ``DenseCache``: the path a CUDA device runs).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import torch
from golden import GOLDEN, SCORE_TOL, kernels_off, load, outputs  # (this directory is on sys.path)

from rendition.model.translation.backends import FusedCPUBackend, TorchBackend
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.search import BeamSearch, generate_ids
from rendition.model.translation.translator import Translator

Runner = Callable[[list[list[int]], dict], list]


def _native(tr: Translator) -> Runner:
    def run(ids, opts):
        return generate_ids(tr.backend, ids, TranslationOptions(**opts), tr.max_batch_tokens)

    return run


def _torch(tr: Translator) -> Runner:
    backend = TorchBackend(tr.model)

    def run(ids, opts):
        with kernels_off():
            return generate_ids(backend, ids, TranslationOptions(**opts), tr.max_batch_tokens)

    return run


def _pool(tr: Translator) -> Runner:
    backend = TorchBackend(tr.model)

    def run(ids, opts):
        o = TranslationOptions(**opts)
        with kernels_off():
            search = BeamSearch(backend, o, capacity=len(ids))
            out = {}
            for i, s in enumerate(ids):  # one a step: every sentence joins a running search
                search.add(i, s)
                out.update(search.step())
            while not search.idle:
                out.update(search.step())
            return [out[i] for i in range(len(ids))]

    return run


BACKENDS: dict[str, Callable[[Translator], Runner]] = {"native": _native, "torch": _torch, "pool": _pool}


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def translator() -> Translator:
    return load()


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_search_reproduces_golden_outputs(golden: dict, translator: Translator, backend: str) -> None:
    if backend == "native":
        assert isinstance(translator.backend, FusedCPUBackend)  # (CI builds the kernels: no silent torch fallback)
    got = outputs(translator, BACKENDS[backend](translator))
    ref, differs = golden["reference"], golden["differs"].get(backend, {})
    assert got.keys() == ref.keys()
    bad = []
    for key, sents in got.items():
        want = differs.get(key, ref[key])
        for i, (g, w) in enumerate(zip(sents, want, strict=True)):
            if [h[0] for h in g] != [h[0] for h in w]:
                bad.append(f"{key}[{i}] tokens {[h[0] for h in g]} != {[h[0] for h in w]}")
            elif any(abs(a[1] - b[1]) > SCORE_TOL for a, b in zip(g, w)):
                bad.append(f"{key}[{i}] scores {[h[1] for h in g]} != {[h[1] for h in w]}")
    assert not bad, f"{len(bad)} sentences differ from the golden file on {backend}:\n" + "\n".join(bad[:20])


def test_golden_file_covers_every_split_and_direction(golden: dict) -> None:
    keys = golden["reference"].keys()
    for split in ("dialogue", "dict", "en-fr", "everyday", "help", "ui"):
        for d in ("en-fr", "fr-en"):
            assert f"beam4/{split}/{d}" in keys and f"greedy/{split}/{d}" in keys
    assert all(len(h) == 4 for s in golden["reference"]["nbest4/en-fr/en-fr"] for h in [s])
    assert torch.tensor([len(s) for s in golden["reference"]["beam4/ui/en-fr"]]).eq(1).all()
