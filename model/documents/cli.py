"""``rendition translate-file``: translate a whole document with the translator in this process.

    rendition translate-file guide.docx guide.fr.docx --source en --target fr
    rendition translate-file messages.pot fr.po --source en --target fr

The formats are ``model.documents.FORMATS`` (by the input's extension); the output has the input's
format.  Each text of the document is split into sentences (``rendition.model.segment``) and all of them are
translated together (``rendition.model.translation.cli.translate_lines``); a text the translator cannot take
(a sentence over its input limit) or whose placeholders do not come back stays as it was, and the
count is reported on stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from rendition.model import documents, segment
from rendition.model.documents import DocumentError, Limits
from rendition.model.segment import InputTooLong


def sentence_translator(
    translate_lines: Callable[[list[str]], list[str]], source: str
) -> Callable[[list[str]], list[str | None]]:
    """texts -> translations, by sentence (one call of ``translate_lines`` for all of them); a text
    with a sentence the translator refuses (``InputTooLong``) comes back ``None``."""

    def translate(texts: list[str]) -> list[str | None]:
        docs = [segment.split(t, source) for t in texts]
        owner = [i for i, d in enumerate(docs) for _ in d.sentences]
        failed: set[int] = set()
        while True:
            todo = [k for k, i in enumerate(owner) if i not in failed]
            sentences = [s for d in docs for s in d.sentences]
            try:
                done = translate_lines([sentences[k] for k in todo])
                break
            except InputTooLong as e:  # (1-based line of what was sent)
                failed.add(owner[todo[e.index - 1]])
        by_sentence = dict(zip(todo, done))
        out: list[str | None] = []
        k = 0
        for i, d in enumerate(docs):
            n = len(d.sentences)
            out.append(None if i in failed else d.join([by_sentence[j] for j in range(k, k + n)]))
            k += n
        return out

    return translate


def build_parser() -> argparse.ArgumentParser:
    from rendition.model.translation.cli import add_translator_options

    p = argparse.ArgumentParser(prog="rendition translate-file", description=__doc__.split("\n\n")[0])
    p.add_argument("input", type=Path, help=f"the document ({', '.join(documents.FORMATS)})")
    p.add_argument("output", type=Path, help="where to write the translation (same format)")
    add_translator_options(p, auto_source=True)
    p.add_argument("--retranslate", action="store_true", help="gettext: translate entries already translated too")
    p.add_argument("--max-unpacked-bytes", type=int, default=Limits.max_unpacked_bytes, help=".docx/.pptx/.odt: unpacked size cap")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    import torch

    from rendition.model.translation.cli import load_translator, read_translator_options, translate_lines

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
    load_args = argparse.Namespace(
        model_dir=args.model_dir, engine="torch", dtype="float32", device=args.device, kv_cache_dtype="auto",
        compute_type=args.compute_type,
    )
    with ExitStack() as stack:
        try:
            translator = load_translator(load_args, stack)
            source = args.source
            if source == "auto":
                from rendition.model.language_id import LanguageDetector

                sample = " ".join(doc.segments)[:5000]
                source = LanguageDetector(translator.languages).detect(sample)[0][0] if sample.strip() else args.target
            if source == args.target:
                translations: list[str | None] = [None] * len(doc.segments)
            else:
                translator.check_pair(source, args.target)
                translator.start_workers(args.workers, args.threads or 0, cores=cores)
                stack.callback(translator.close)
                lines = lambda xs: translate_lines(  # noqa: E731
                    translator, xs, source, args.target, progress=not args.quiet, glossary=glossary, **options
                )  # fmt: skip
                translations = documents.translate_segments(doc.segments, sentence_translator(lines, source))
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
