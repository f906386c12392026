#!/usr/bin/env bash
# Set up a virtual environment (CPU torch) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip
. scripts/install-torch.sh               # CPU build (PyTorch CPU index, else the default index); GPU users: install their CUDA build of torch first
# CI: a native kernel that does not build or load is a failure (install and tests), not a skip.
export RENDITION_REQUIRE_NATIVE=1
pip install -q -e '.[test,train]'
. scripts/install-chromium.sh           # the web page's tests drive headless Chromium (tests/service/test_ui.py)
ruff check .
pytest -q "$@"
