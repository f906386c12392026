"""Where inline formatting lands when documents are translated (``documents.inline``).

Translates each file's paragraphs and their formatted words with the shipped translator, as
``rendition translate-file`` does, and counts what became of every region (a link, a bold or
italic phrase) and every piece of inline code: found as translated on its own, found as written
in the source, found as the closest run of words, or not found (it then takes a share of the words
around it by length); inline code: in its place, or where it was.

    python benchmarks/inline_placement.py --source en --target fr FILE.html|.md|.docx|... [FILE ...]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from rendition.model import documents
from rendition.model.documents.cli import text_translator
from rendition.model.documents.inline import Paragraph
from rendition.model.documents.markdown import Markdown
from rendition.model.documents.office import ZipXmlDocument
from rendition.model.documents.textfiles import Html
from rendition.model.text import pipeline
from rendition.model.text.cli import translator_decoder
from rendition.model.translation.options import TranslationOptions
from rendition.model.translation.translator import Translator


def outcomes(para: Paragraph, translation: str, regions: list[str | None]) -> Counter:
    """What became of each region and fixed slot of one paragraph."""
    t = translation.strip()
    placed = dict(para._placed(t, regions))
    out: Counter = Counter()
    for a, b in para.groups.items():
        n = sum(i in para.fixed for i in range(a, b))
        out["code in its place" if (a, b) in placed else "code where it was"] += n
    for (a, b), own, source in zip(para.regions, regions, para.region_texts, strict=True):
        w = placed.get((a, b))
        if w is None:
            out["region not found"] += 1
        elif own is not None and t[w[0] : w[1]].lower() == own.strip().lower().strip(".,;:!?"):
            out["region as translated alone"] += 1
        elif t[w[0] : w[1]].lower() == source.lower():
            out["region as written"] += 1
        else:
            out["region closest words"] += 1
    return out


def paragraphs(doc: documents.Document) -> list[Paragraph]:
    """A document's paragraphs, in the order of its segments."""
    if isinstance(doc, Html):
        return [para for _, para in doc.paragraphs]
    if isinstance(doc, Markdown):
        return [t.paragraph for t in doc.texts]
    if isinstance(doc, ZipXmlDocument):
        return [para for _, _, para in doc.paragraphs]
    raise SystemExit(f"{type(doc).__name__}: no inline formatting to count (HTML, Markdown, .docx, .pptx, .odt, .odp)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--source", default="en")
    ap.add_argument("--target", default="fr")
    ap.add_argument("--beam-size", type=int, default=4)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    translator = Translator.from_pretrained(compute_type="int8")
    translate = text_translator(
        translator_decoder(translator, args.target, progress=False), args.source,
        TranslationOptions(beam_size=args.beam_size), pipeline.Protection(), pipeline.DEFAULT_FALLBACK_NGRAM,
    )  # fmt: skip
    total: Counter = Counter()
    n_paragraphs = with_markup = 0
    for path in args.files:
        doc = documents.open_document(path.read_bytes(), path.name, documents.Limits(max_segments=1 << 30, max_chars=1 << 40))
        paras = paragraphs(doc)
        translations = documents.translate_segments(doc.segments, translate, doc.placeholders_whole)
        n = len(paras)
        own = iter(translations[n:])
        for para, t in zip(paras, translations[:n], strict=True):
            regions = [next(own) for _ in para.regions]
            n_paragraphs += 1
            if t is not None and (para.regions or para.fixed):
                with_markup += 1
                total += outcomes(para, t, regions)
    result = {"files": len(args.files), "paragraphs": n_paragraphs, "with inline markup": with_markup, **dict(sorted(total.items()))}
    regions = sum(v for k, v in total.items() if k.startswith("region"))
    codes = sum(v for k, v in total.items() if k.startswith("code"))
    if regions:
        result["regions found"] = round(1 - total["region not found"] / regions, 4)
    if codes:
        result["code in its place (share)"] = round(total["code in its place"] / codes, 4)
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
