"""Evaluation of a translator on held-out splits: sacreBLEU BLEU and chrF, per direction.

A set is a split file's name without ``<split>.`` and ``.tsv``: ``en-fr`` (DDTP package
descriptions), ``everyday.en-fr`` (the mixed everyday set), ``ui.en-fr``, ``dialogue.en-fr``,
``help.en-fr``, ``dict.en-fr`` (the broad corpus's sources, ``model.training.corpus``)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from model.training.data import SPLITS_DIR, read_tsv
from model.translation.translator import KV_CACHE_DTYPES, Translator


def evaluate(
    translator: Translator,
    pairs: Sequence[str] = ("en-fr",),
    split: str = "test",
    beam_size: int = 4,
    limit: int | None = None,
    splits_dir: Path = SPLITS_DIR,
    length_penalty: float = 1.0,
) -> dict[str, dict]:
    import sacrebleu
    from sacrebleu.metrics import BLEU, CHRF

    out: dict[str, dict] = {}
    for lp in pairs:
        data = read_tsv(splits_dir / f"{split}.{lp}.tsv")[:limit]
        source, _, langs = lp.rpartition(".")
        a, b = langs.split("-")
        for src_lang, tgt_lang in ((a, b), (b, a)):
            if src_lang not in translator.languages or tgt_lang not in translator.languages:
                continue
            srcs = [p.src if src_lang == "en" else p.tgt for p in data]
            refs = [p.tgt if src_lang == "en" else p.src for p in data]
            hyps = [t.text for t in translator.translate(srcs, source=src_lang, target=tgt_lang, beam_size=beam_size, length_penalty=length_penalty)]
            bleu, chrf = BLEU(), CHRF()
            bs, cs = bleu.corpus_score(hyps, [refs]), chrf.corpus_score(hyps, [refs])
            out[f"{source} {src_lang}-{tgt_lang}" if source else f"{src_lang}-{tgt_lang}"] = {
                "sentences": len(srcs),
                "bleu": round(bs.score, 2),
                "chrf": round(cs.score, 2),
                "bleu_signature": str(bleu.get_signature()),
                "chrf_signature": str(chrf.get_signature()),
                "sacrebleu": sacrebleu.__version__,
                "beam_size": beam_size,
                "length_penalty": length_penalty,
            }
    return out


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="rendition evaluate", description=__doc__)
    ap.add_argument("--model-dir", type=Path, default=None, help="default: the shipped translator")
    ap.add_argument("--pairs", "--sets", nargs="+", default=["en-fr"], help="en-fr (DDTP), everyday.en-fr, ui.en-fr, dialogue.en-fr, help.en-fr, dict.en-fr")
    ap.add_argument("--split", default="test", choices=["valid", "test"])
    ap.add_argument("--beam-size", type=int, default=4)
    ap.add_argument("--length-penalty", type=float, default=1.0, help="GNMT length-penalty alpha")
    ap.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--kv-cache-dtype", default="auto", choices=["auto", *KV_CACHE_DTYPES], help="decoder K/V storage")
    ap.add_argument("--output", type=Path, help="also write the results as JSON here")
    a = ap.parse_args(argv)
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    tr = Translator.from_pretrained(a.model_dir, kv_cache_dtype=a.kv_cache_dtype)
    res = evaluate(tr, a.pairs, a.split, a.beam_size, a.limit, length_penalty=a.length_penalty)
    for direction, r in res.items():
        print(f"{direction}: BLEU {r['bleu']:.2f}  chrF {r['chrf']:.2f}  ({r['sentences']} sentences, beam {r['beam_size']}, alpha {r['length_penalty']})")
        print(f"  {r['bleu_signature']}\n  {r['chrf_signature']}")
    if a.output:
        a.output.write_text(json.dumps(res, indent=2) + "\n")
    sys.stdout.flush()
