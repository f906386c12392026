"""The model's commands of ``rendition`` (``python -m rendition.model.cli``), implemented beside their code.

Each subcommand is ``module:function`` taking ``argv``; modules are imported only when their
subcommand runs.  The installed ``rendition`` script is ``rendition.service.cli``, which adds ``serve`` to
these: ``model`` never imports ``service``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "translate": ("rendition.model.text.cli:main", "translate lines from stdin to stdout"),
    "translate-file": ("rendition.model.documents.cli:main", "translate a document (.txt .html .docx .pptx .odt .po .srt)"),
    "embed": ("rendition.model.embedding.encoder:main", "embed lines from stdin (JSON lines, or .npy with --output)"),
    "data": ("rendition.model.training.corpus.build:data_main", "rebuild the DDTP splits (--fetch: with apt); --corpus: the broad corpus from Debian packages"),
    "train": ("rendition.model.training.train:main", "train the translator"),
    "evaluate": ("rendition.model.training.evaluate:main", "BLEU/chrF of a translator on the test split"),
    "train-encoder": ("rendition.model.training.distill:main", "train the DiSAN sentence encoder by distillation"),
    "evaluate-encoder": ("rendition.model.training.distill:evaluate_main", "retrieval accuracy and fidelity of the sentence encoder"),
    "export-ct2": ("rendition.model.export.ct2:main", "export a translator to a CTranslate2 model directory"),
    "build-shortlist": ("rendition.model.export.shortlist:main", "build a translator's vocabulary shortlist from a parallel corpus"),
}


def usage(commands: Mapping[str, tuple[str, str]] = COMMANDS) -> str:
    lines = ["usage: rendition COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<18} {help_}" for name, (_, help_) in commands.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None, commands: Mapping[str, tuple[str, str]] = COMMANDS) -> None:
    """Run ``argv[0]`` of ``commands`` (name -> ("module:function", help)) with the rest of argv."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage(commands))
        return
    name, rest = argv[0], argv[1:]
    if name not in commands:
        print(f"rendition: unknown command {name!r}\n\n{usage(commands)}", file=sys.stderr)
        raise SystemExit(2)
    target, _ = commands[name]
    module, func = target.split(":")
    getattr(importlib.import_module(module), func)(rest)


if __name__ == "__main__":
    main()
