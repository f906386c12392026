"""``rendition translate-file``: translate a whole document with the translator in this process.

    rendition translate-file guide.docx guide.fr.docx --source en --target fr
    rendition translate-file messages.pot fr.po --source en --target fr

The formats are ``model.documents.FORMATS`` (by the input's extension); the output has the input's
format.  The document's texts go through the text pipeline the service runs
(``rendition.model.text.pipeline``: sentences, placeholders, glossary terms and the spans to keep,
all translated together); a text the translator cannot take (a sentence over its input limit) or
whose placeholders do not come back stays as it was, and the count is reported on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from rendition.model import documents
from rendition.model.documents import DocumentError, Limits
from rendition.model.text import pipeline
from rendition.model.text.language_id import LanguageDetector, Runs
from rendition.model.translation.options import TranslationOptions


def text_translator(
    decode: pipeline.Decode, source: str, opts: TranslationOptions, protection: pipeline.Protection, fallback_ngram: int
) -> Callable[[list[str]], list[str | None]]:
    """texts -> translations through the text pipeline (one run for all of them); a text with a
    sentence the translator refuses (over its input limit) comes back ``None``."""

    def translate(texts: list[str]) -> list[str | None]:
        failed: set[int] = set()
        while True:
            todo = [i for i in range(len(texts)) if i not in failed]
            try:
                result = asyncio.run(pipeline.translate([texts[i] for i in todo], source, decode, opts, protection, fallback_ngram))
                break
            except pipeline.SentenceTooLong as e:
                failed.add(todo[e.text])
        done = dict(zip(todo, (t.text for t in result.translations)))
        return [done.get(i) for i in range(len(texts))]

    return translate


def build_parser() -> argparse.ArgumentParser:
    from rendition.model.text.cli import add_translator_options

    p = argparse.ArgumentParser(prog="rendition translate-file", description=__doc__.split("\n\n")[0])
    p.add_argument("input", type=Path, help=f"the document ({', '.join(documents.FORMATS)})")
    p.add_argument("output", type=Path, help="where to write the translation (same format)")
    add_translator_options(p, auto_source=True)
    p.add_argument("--retranslate", action="store_true", help="gettext: translate entries already translated too")
    p.add_argument("--max-unpacked-bytes", type=int, default=Limits.max_unpacked_bytes, help=".docx/.pptx/.odt: unpacked size cap")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    import torch

    from rendition.model.text.cli import Loading, load_translator, read_translator_options, translator_decoder

    p = build_parser()
    args = p.parse_args(argv)
    options, glossary = read_translator_options(p, args)
    limits = Limits(
        max_unpacked_bytes=args.max_unpacked_bytes,
        max_segments=1 << 40,
        max_chars=1 << 40,
        names=("--max-unpacked-bytes", "RENDITION_MAX_FILE_MEMBERS", "segments", "characters"),
    )

    def fail(message: str) -> None:
        print(f"rendition translate-file: error: {message}", file=sys.stderr)
        raise SystemExit(2)

    try:
        data = args.input.read_bytes()
    except OSError as e:
        fail(f"{args.input}: {e.strerror or e}")
    try:
        doc = documents.open_document(data, args.input.name, limits, target=args.target, retranslate=args.retranslate)
    except DocumentError as e:
        fail(f"{args.input}: {e}")

    cores = torch.get_num_threads()
    torch.set_num_threads(1)
    with ExitStack() as stack:
        try:
            translator = load_translator(Loading(args.model_dir, device=args.device, compute_type=args.compute_type), stack)
            source = args.source
            prepared = documents.prepare(doc.segments, doc.placeholders_whole)
            if source == "auto":  # the document's language, and each text's runs in another (a document that mixes them)
                det = LanguageDetector(translator.languages)
                sample = " ".join(doc.segments)[:5000]
                source = det.detect(sample)[0][0] if sample.strip() else args.target
                runs = Runs.gather(det.runs(text, source) for text in prepared.texts)
            else:
                runs = Runs.single(prepared.texts, source)
            if set(runs.by_language) <= {args.target}:  # already in the target language
                translations: list[str | None] = [None] * len(doc.segments)
            else:
                for lang in runs.by_language:
                    if lang != args.target:
                        translator.check_pair(lang, args.target)
                translator.start_workers(args.workers, args.threads or 0, cores=cores)
                stack.callback(translator.close)
                decode = translator_decoder(translator, args.target, progress=not args.quiet)
                protection = pipeline.Protection(glossary=glossary, spans=args.protect_spans)
                done: dict[str, Sequence[str | None]] = {}
                for lang, texts in runs.by_language.items():
                    translate = text_translator(decode, lang, TranslationOptions(**options), protection, args.fallback_no_repeat_ngram)
                    done[lang] = texts if lang == args.target else translate(texts)
                translations = documents.finish(prepared, doc.segments, documents.join_runs(runs, done))
        except (RuntimeError, OSError, ValueError, KeyError) as e:  # ModelLoadError, unsupported pair
            fail(str(e))
    try:
        args.output.write_bytes(doc.render(translations))
    except OSError as e:
        fail(f"{args.output}: {e.strerror or e}")
    kept = sum(t is None for t, s in zip(translations, doc.segments) if any(c.isalpha() for c in s))
    if not args.quiet or kept:
        print(
            f"rendition translate-file: {len(doc.segments)} texts, {kept} kept untranslated -> {args.output}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
