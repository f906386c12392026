"""Glossary evaluation on held-out sentences: do the target terms come out as given, and what does
it do to BLEU?

    python benchmarks/glossary_eval.py                       # the shipped translator, en -> fr
    python benchmarks/glossary_eval.py --stand-ins 3,7,12,25,40 --limit 100

The glossary is built from the committed test splits alone (DDTP descriptions, UI strings, GNOME
help; ``data/splits/``), with no hand-picked terms: every English word of 4+ letters is paired
with the French word or word pair of the references it co-occurs with most (Dice coefficient over
sentence pairs); the best-associated pairs whose two sides differ become the glossary.  The *term
sentences* are those whose source holds a glossary term and whose reference holds that term's
target; the *other sentences* hold no glossary term at all.  Reported, for the translator alone
and with the glossary: the share of (sentence, term) pairs whose target term appears in the output
exactly as given (its first letter may be upper-cased at the start of the output), the terms whose
stand-in was lost, sacreBLEU on the term sentences, and on the other sentences whether every
output is identical with and without the glossary (it must be) and their BLEU.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import Counter

from rendition.model.text.glossary import STAND_INS, Glossary
from rendition.model.training.data import SPLITS_DIR, read_tsv
from rendition.model.translation.translator import Translator

SPLITS = ("test.en-fr.tsv", "test.ui.en-fr.tsv", "test.help.en-fr.tsv")
WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
# function words (never glossary terms)
EN_STOP = set(
    "about above after again also because been before being below between both could does doing down during each "
    "from further have having here into itself more most once only other over same should some such than that "
    "their theirs them then there these they this those through under until very what when where which while "
    "will with would your yours will cannot shall just like make made used uses using want need".split()
)
FR_STOP = set(
    "le la les un une des du de d l à au aux et ou en dans sur pour par avec sans est sont être a ont ce cet cette "
    "ces qui que qu ne pas plus se sa son ses vous votre vos nous notre il elle ils elles on y peut si tout tous "
    "toute toutes même aussi lors leur leurs été fait".split()
)


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def build_glossary(pairs, size: int, min_count: int) -> dict[str, str]:
    """The ``size`` best-associated (English word, French word or word pair) of ``pairs``."""
    en_df: Counter = Counter()
    fr_df: Counter = Counter()
    co: Counter = Counter()
    for p in pairs:
        e = {w for w in words(p.src) if len(w) >= 4 and w not in EN_STOP}
        fw = words(p.tgt)
        f = {w for w in fw if len(w) >= 3 and w not in FR_STOP}
        f |= {f"{a} {b}" for a, b in zip(fw, fw[1:]) if a not in FR_STOP and b not in FR_STOP}
        en_df.update(e)
        fr_df.update(f)
        co.update((a, b) for a in e for b in f)
    best: dict[str, tuple[float, str]] = {}
    for (a, b), c in co.items():
        if c < min_count or en_df[a] < min_count or fr_df[b] < min_count or a in b:
            continue
        dice = 2 * c / (en_df[a] + fr_df[b])
        if dice > best.get(a, (0.0, ""))[0]:
            best[a] = (dice, b)
    ranked = sorted(best.items(), key=lambda kv: -kv[1][0])
    return {a: b for a, (dice, b) in ranked[:size] if dice >= 0.5}


def has(term: str, text: str, flags: int = 0) -> bool:
    return re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text, flags) is not None


def term_hit(term: str, output: str) -> bool:
    """The target term as given; its first letter may be upper-cased at the start of the output."""
    return has(term, output) or output.lstrip(" \"'«“").startswith(term[:1].upper() + term[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--terms", type=int, default=80, help="glossary size (best-associated pairs)")
    ap.add_argument("--min-count", type=int, default=4, help="sentence pairs a word (and its pairing) must occur in")
    ap.add_argument("--limit", type=int, default=250, help="term sentences evaluated (a seeded sample)")
    ap.add_argument("--others", type=int, default=150, help="sentences without terms evaluated")
    ap.add_argument("--stand-ins", default=",".join(STAND_INS), help="comma-separated, in the order used")
    ap.add_argument("--inline", action="store_true", help="put the target terms themselves into the source (no stand-ins)")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    import sacrebleu

    pairs = [p for name in SPLITS for p in read_tsv(SPLITS_DIR / name)]
    terms = build_glossary(pairs, args.terms, args.min_count)
    glossary = Glossary(terms, tuple(args.stand_ins.split(",")), inline=args.inline)
    term_rows, other_rows = [], []
    for p in pairs:
        found = [t for t in terms if has(t, p.src, re.IGNORECASE)]
        if not found:
            other_rows.append(p)
        elif all(has(terms[t], p.tgt, re.IGNORECASE) for t in found):
            term_rows.append((p, found))
    rng = random.Random(0)
    term_rows = sorted(rng.sample(term_rows, min(args.limit, len(term_rows))), key=lambda r: len(r[0].src))
    other_rows = rng.sample(other_rows, min(args.others, len(other_rows)))

    tr = Translator.from_pretrained(device="cpu")

    def run(texts: list[str]) -> list[str]:
        return [t.text for t in tr.translate(texts, "en", "fr", beam_size=args.beam)]

    t0 = time.perf_counter()
    srcs = [p.src for p, _ in term_rows]
    refs = [p.tgt for p, _ in term_rows]
    plain = run(srcs)
    marked = [glossary.protect(s) for s in srcs]
    raw = run([m.text for m in marked])
    restored = [glossary.restore(m, r) for m, r in zip(marked, raw)]
    with_glossary = [r.text for r in restored]
    other_src = [p.src for p in other_rows]
    other_plain = run(other_src) if other_src else []
    other_marked = [glossary.protect(s) for s in other_src]
    other_with = [glossary.restore(m, r).text for m, r in zip(other_marked, run([m.text for m in other_marked]) if other_src else [])]
    seconds = time.perf_counter() - t0

    checks = [(terms[t], i) for i, (_, found) in enumerate(term_rows) for t in found]
    hits_plain = sum(term_hit(term, plain[i]) for term, i in checks)
    hits_with = sum(term_hit(term, with_glossary[i]) for term, i in checks)
    bleu = sacrebleu.metrics.BLEU()
    figures = {
        "glossary_terms": len(terms),
        "stand_ins": "inline target terms" if args.inline else args.stand_ins,
        "term_sentences": len(term_rows),
        "term_occurrences": len(checks),
        "terms_as_given_without_glossary": round(100 * hits_plain / len(checks), 1),
        "terms_as_given_with_glossary": round(100 * hits_with / len(checks), 1),
        "stand_ins_lost": sum(r.missing for r in restored),
        "bleu_term_sentences_without": round(bleu.corpus_score(plain, [refs]).score, 2),
        "bleu_term_sentences_with": round(bleu.corpus_score(with_glossary, [refs]).score, 2),
        "other_sentences": len(other_rows),
        "other_sentences_identical": sum(a == b for a, b in zip(other_plain, other_with)),
        "bleu_other_sentences": round(bleu.corpus_score(other_plain, [[p.tgt for p in other_rows]]).score, 2) if other_rows else None,
        "bleu_other_sentences_with": round(bleu.corpus_score(other_with, [[p.tgt for p in other_rows]]).score, 2) if other_rows else None,
        "seconds": round(seconds, 1),
    }
    print(json.dumps(figures, indent=1))
    misses = [(srcs[i], with_glossary[i], term) for term, i in checks if not term_hit(term, with_glossary[i])]
    for src, out, term in misses[:10]:
        print(f"miss {term!r}: {src!r} -> {out!r}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            examples = [{"source": a, "plain": b, "glossary": c} for a, b, c in zip(srcs, plain, with_glossary)]
            json.dump(figures | {"glossary": terms, "examples": examples}, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
