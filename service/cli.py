"""The ``rendition`` command: ``serve`` (this package) and the model's commands (``rendition.model.cli``).

It lives on the service side because the service depends on the model and not the other way
round; modules are still imported only when their subcommand runs, so ``rendition translate``
never imports the web stack.
"""

from __future__ import annotations

from collections.abc import Sequence

from rendition.model import cli as model_cli

COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("rendition.service.main:main", "start the HTTP service (uvicorn) on the shipped models"),
    **model_cli.COMMANDS,
}


def main(argv: Sequence[str] | None = None) -> None:
    model_cli.main(argv, COMMANDS)


if __name__ == "__main__":
    main()
