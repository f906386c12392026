"""Evaluation of a translator on held-out splits: sacreBLEU BLEU and chrF, per direction.

A set is a split file's name without ``<split>.`` and ``.tsv``: ``en-fr`` (DDTP package
descriptions), ``everyday.en-fr`` (the mixed everyday set), ``ui.en-fr``, ``dialogue.en-fr``,
``help.en-fr``, ``dict.en-fr`` (the broad corpus's sources, ``rendition.model.training.corpus``; the same
names with ``en-de`` for English-German: ``en-de``, ``everyday.en-de``, ``ui.en-de`` ...), and
``daily.en-fr``: sentences of daily life written by hand, each with the words a correct
translation must hold (``<split>.daily.words.tsv``); for it the word hit rate is reported too,
overall and per category (family, food, animals, ...), with BLEU and chrF per category.
``conv.en-fr``: everyday conversation from held-out instances of the conversation frames
(``rendition.model.training.corpus.conversation``), with the words that show each construction
was translated as an idiom ("faim" for "hungry", "depuis" for "have been waiting"; ``<split>.conv.words.tsv``),
reported per frame the same way.

``--against DIR`` scores a second translator on the same sets and gives, per direction, this
model's BLEU minus that one's with its 95% interval from a paired bootstrap (Koehn 2004: the test set's
sentences resampled with replacement, both systems scored on each resample)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rendition.model.text.cli import add_storage_options
from rendition.model.training.data import SPLITS_DIR, has_word, read_tsv
from rendition.model.translation.translator import Translator


def read_words(path: Path) -> dict[str, tuple[str, list[str], list[str]]]:
    """English sentence -> (category, English words, French words) from a ``.words.tsv`` file."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            cat, en, en_words, fr_words = line.split("\t")
            out[en] = (cat, en_words.split("|") if en_words else [], fr_words.split("|") if fr_words else [])
    return out


def word_hits(hyps: Sequence[str], words: Sequence[list[str]], cats: Sequence[str], refs: Sequence[str], sources: Sequence[str] | None = None) -> dict:
    """The share of required words present in the hypotheses, overall and per category (with
    BLEU and chrF per category); with ``sources``, also ``misses``: each sentence whose
    translation lacks some of its words (source, output and the words missed)."""
    from sacrebleu.metrics import BLEU, CHRF

    found = [[has_word(h, w) for w in need] for h, need in zip(hyps, words)]

    def rate(idx: list[int]) -> dict:
        total = sum(len(words[i]) for i in idx)
        hit = sum(sum(found[i]) for i in idx)
        h, r = [hyps[i] for i in idx], [refs[i] for i in idx]
        return {"sentences": len(idx), "words": total, "hit_rate": round(100 * hit / max(total, 1), 1),
                "bleu": round(BLEU().corpus_score(h, [r]).score, 2), "chrf": round(CHRF().corpus_score(h, [r]).score, 2)}

    out = rate(list(range(len(hyps))))
    out["by_category"] = {c: rate([i for i, x in enumerate(cats) if x == c]) for c in dict.fromkeys(cats)}
    if sources is not None:
        out["misses"] = [
            {"source": src, "output": hyp, "missing": [w for w, ok in zip(need, ok_) if not ok]}
            for src, hyp, need, ok_ in zip(sources, hyps, words, found)
            if not all(ok_)
        ]
    return out


def evaluate(
    translator: Translator,
    pairs: Sequence[str] = ("en-fr",),
    split: str = "test",
    beam_size: int = 4,
    limit: int | None = None,
    splits_dir: Path = SPLITS_DIR,
    length_penalty: float = 1.0,
    keep_hypotheses: bool = False,
) -> dict[str, dict]:
    """Scores per direction (``"en-fr"``, ``"conv fr-en"`` ...); ``keep_hypotheses``: each with
    its ``hypotheses`` and ``references`` too (for ``paired_bootstrap``)."""
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
            key = f"{source} {src_lang}-{tgt_lang}" if source else f"{src_lang}-{tgt_lang}"
            out[key] = {
                "sentences": len(srcs),
                "bleu": round(bs.score, 2),
                "chrf": round(cs.score, 2),
                "bleu_signature": str(bleu.get_signature()),
                "chrf_signature": str(chrf.get_signature()),
                "sacrebleu": sacrebleu.__version__,
                "beam_size": beam_size,
                "length_penalty": length_penalty,
                "compute_type": translator.compute_type,
                "shortlist": translator.shortlist is not None,
            }
            if keep_hypotheses:
                out[key] |= {"hypotheses": hyps, "references": refs}
            words_file = splits_dir / f"{split}.{source}.words.tsv"
            if source and words_file.exists():
                table = read_words(words_file)
                rows = [table[p.src] for p in data]
                need = [r[2] if tgt_lang == "fr" else r[1] for r in rows]
                out[key]["words"] = word_hits(hyps, need, [r[0] for r in rows], refs, sources=srcs)
    return out


def paired_bootstrap(
    hyps_a: Sequence[str], hyps_b: Sequence[str], refs: Sequence[str], resamples: int = 1000, seed: int = 12345
) -> tuple[float, float, float]:
    """BLEU(b) - BLEU(a) on the whole set and the 2.5% and 97.5% points of that difference over
    ``resamples`` paired resamplings of the sentences (sacreBLEU's sufficient statistics per
    sentence, summed per resample: each resample's BLEU is the corpus BLEU of those sentences)."""
    import numpy as np
    from sacrebleu.metrics import BLEU

    bleu = BLEU()
    a = np.asarray(bleu._extract_corpus_statistics(list(hyps_a), [list(refs)]), dtype=np.int64)
    b = np.asarray(bleu._extract_corpus_statistics(list(hyps_b), [list(refs)]), dtype=np.int64)

    def score(stats: np.ndarray) -> float:
        return bleu._compute_score_from_stats([int(x) for x in stats]).score

    rng = np.random.default_rng(seed)
    n = len(refs)
    diffs = sorted(score(b[idx].sum(0)) - score(a[idx].sum(0)) for idx in (rng.integers(0, n, n) for _ in range(resamples)))
    return score(b.sum(0)) - score(a.sum(0)), diffs[int(0.025 * resamples)], diffs[min(resamples - 1, int(0.975 * resamples))]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="rendition evaluate", description=__doc__)
    ap.add_argument("--model-dir", type=Path, default=None, help="default: the shipped translator")
    ap.add_argument("--pairs", "--sets", nargs="+", default=["en-fr"], help="en-fr (DDTP), everyday.en-fr, ui.en-fr, dialogue.en-fr, help.en-fr, dict.en-fr, daily.en-fr, conv.en-fr; "
                    "en-de (DDTP), everyday.en-de, ui.en-de, dialogue.en-de, help.en-de, dict.en-de")
    ap.add_argument("--split", default="test", choices=["valid", "test"])
    ap.add_argument("--beam-size", type=int, default=4)
    ap.add_argument("--length-penalty", type=float, default=1.0, help="GNMT length-penalty alpha")
    ap.add_argument("--limit", type=int, default=None, help="only the first N pairs")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--compute-type", default="float32", choices=["auto", "int8", "float32", "float16", "bfloat16"],
        help="the translator's compute type (rendition.model.kernels.compute_type); auto: int8 on a CPU that runs it",
    )  # fmt: skip
    add_storage_options(ap)
    ap.add_argument("--against", type=Path, default=None, metavar="DIR",
                    help="a translator to compare with: its scores too, and this model's BLEU minus its BLEU with the 95%% interval (paired bootstrap)")
    ap.add_argument("--output", type=Path, help="also write the results as JSON here")
    ap.add_argument("--show-misses", action="store_true", help="daily life, conversation: print each sentence whose translation misses some of its words")
    a = ap.parse_args(argv)
    missing = [lp for lp in a.pairs if not (SPLITS_DIR / f"{a.split}.{lp}.tsv").exists()]
    if missing:
        ap.error(f"no {a.split} split for {', '.join(missing)} in {SPLITS_DIR}")
    if a.threads:
        import torch

        torch.set_num_threads(a.threads)
    tr = Translator.from_pretrained(a.model_dir, kv_cache_dtype=a.kv_cache_dtype, compute_type=a.compute_type, shortlist=a.shortlist)
    print(f"compute type {tr.compute_type}, back end {tr.backend.name}, shortlist {'on' if tr.shortlist else 'off'}")
    res = evaluate(tr, a.pairs, a.split, a.beam_size, a.limit, length_penalty=a.length_penalty, keep_hypotheses=a.against is not None)
    if a.against is not None:
        other = Translator.from_pretrained(a.against, kv_cache_dtype=a.kv_cache_dtype, compute_type=a.compute_type, shortlist=a.shortlist)
        res_b = evaluate(other, a.pairs, a.split, a.beam_size, a.limit, length_penalty=a.length_penalty, keep_hypotheses=True)
        for direction, r in res.items():
            rb = res_b[direction]
            diff, lo, hi = paired_bootstrap(rb["hypotheses"], r["hypotheses"], r["references"])  # this model minus DIR
            r["against"] = {"model_dir": str(a.against), "bleu": rb["bleu"], "chrf": rb["chrf"], "bleu_difference": round(diff, 2), "interval_95": [round(lo, 2), round(hi, 2)]}
            if "words" in rb:
                r["against"]["word_hit_rate"] = rb["words"]["hit_rate"]
            del r["hypotheses"], r["references"]
    for lp in a.pairs:
        if not set(lp.rpartition(".")[2].split("-")) <= set(tr.languages):
            print(f"{lp}: skipped, the translator's languages are {', '.join(tr.languages)}")
    for direction, r in res.items():
        print(f"{direction}: BLEU {r['bleu']:.2f}  chrF {r['chrf']:.2f}  ({r['sentences']} sentences, beam {r['beam_size']}, alpha {r['length_penalty']})")
        print(f"  {r['bleu_signature']}\n  {r['chrf_signature']}")
        if "against" in r:
            o = r["against"]
            print(f"  against {o['model_dir']}: BLEU {o['bleu']:.2f}  chrF {o['chrf']:.2f}  difference {o['bleu_difference']:+.2f} [{o['interval_95'][0]:+.2f}, {o['interval_95'][1]:+.2f}] (95%, paired bootstrap)"
                  + (f"  words {o['word_hit_rate']:.1f}%" if "word_hit_rate" in o else ""))
        if "words" in r:
            w = r["words"]
            print(f"  {'words of the idioms' if direction.startswith('conv') else 'words of daily life'}: {w['hit_rate']:.1f}% of {w['words']}")
            for cat, c in w["by_category"].items():
                print(f"    {cat:<10} words {c['hit_rate']:5.1f}%  BLEU {c['bleu']:6.2f}  chrF {c['chrf']:6.2f}  ({c['sentences']} sentences)")
            if a.show_misses:
                print(f"  {len(w['misses'])} sentences miss words:")
                for m in w["misses"]:
                    print(f"    {m['source']}  =>  {m['output']}  (missing: {', '.join(m['missing'])})")
    if a.output:
        a.output.write_text(json.dumps(res, indent=2) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
