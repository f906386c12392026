#!/usr/bin/env bash
# The package as users install it: the wheel built from this tree, installed with its runtime
# dependencies (and the otel extra, which one service test uses) into a fresh virtual environment.
#   scripts/installed-venv.sh DIR      ->  DIR/dist/rendition-*.whl and DIR/venv
# The end-to-end tests start the service from DIR/venv, outside the source tree
# (RENDITION_TEST_VENV=DIR/venv; scripts/test.sh builds it once and sets it).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$(mkdir -p "$1" && cd "$1" && pwd)"
rm -rf "$DIR/dist" "$DIR/venv"
# the native kernels are compiled into the wheel here, as `pip install .` does for a user
RENDITION_REQUIRE_NATIVE="${RENDITION_REQUIRE_NATIVE:-1}" python3 -m pip wheel -q --no-deps -w "$DIR/dist" "$ROOT"
python3 -m venv "$DIR/venv"
(
    cd "$DIR"  # (nothing of the source tree on the path while installing)
    . "$DIR/venv/bin/activate"
    pip install -q --upgrade pip
    . "$ROOT/scripts/install-torch.sh"
    WHEEL="$(ls "$DIR"/dist/rendition-*.whl)"
    pip install -q "$WHEEL[otel]"
)
echo "$DIR/venv"
