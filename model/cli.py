"""The ``rendition`` command: one entry point, subcommands implemented beside their code.

Each subcommand is ``module:function`` taking ``argv``; modules are imported only when their
subcommand runs, so ``rendition translate`` never imports the web stack.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("service.main:main", "start the HTTP service (uvicorn) on the shipped models"),
    "translate": ("model.translate_cli:main", "translate lines from stdin to stdout"),
    "embed": ("model.encoder:main", "embed lines from stdin (JSON lines, or .npy with --output)"),
    "data": ("model.data:main", "rebuild the DDTP splits (--fetch: with apt); --corpus: the broad corpus from Debian packages"),
    "train": ("model.train:main", "train the translator"),
    "evaluate": ("model.evaluate:main", "BLEU/chrF of a translator on the test split"),
    "train-encoder": ("model.distill:main", "train the DiSAN sentence encoder by distillation"),
    "evaluate-encoder": ("model.distill:evaluate_main", "retrieval accuracy and fidelity of the sentence encoder"),
    "export-ct2": ("model.ct2:main", "export a translator to a CTranslate2 model directory"),
}


def usage() -> str:
    lines = ["usage: rendition COMMAND [ARGS]", "", "commands:"]
    lines += [f"  {name:<18} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"rendition: unknown command {name!r}\n\n{usage()}", file=sys.stderr)
        raise SystemExit(2)
    target, _ = COMMANDS[name]
    module, func = target.split(":")
    getattr(importlib.import_module(module), func)(rest)


if __name__ == "__main__":
    main()
