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
# GNU gettext's msgfmt checks the translated catalogs (tests/model/documents); install it once where missing
if ! command -v msgfmt >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends gettext
fi
# lttoolbox's lt-proc and Apertium's bilingual dictionaries: the daily-life lexicon's triangulation (tests/model/training/test_daily.py)
if ! command -v lt-proc >/dev/null 2>&1 || [ ! -e /usr/share/apertium/apertium-eo-fr ]; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=$([ "$(id -u)" -eq 0 ] || echo sudo)
        $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends lttoolbox \
            apertium-eng-spa apertium-fr-es apertium-eng-cat apertium-fra-cat apertium-eo-en apertium-eo-fr
    fi
fi
. scripts/install-chromium.sh           # the web page's tests drive headless Chromium (tests/service/test_ui.py)
# The service tests start their servers as users run the package: the wheel built from this tree,
# installed into a fresh virtual environment, started outside the tree (tests/test_installed.py).
export RENDITION_TEST_VENV="$(scripts/installed-venv.sh build/installed | tail -1)"
ruff check .
mypy                                    # types of model/ and service/ ([tool.mypy] in pyproject.toml)
pytest -q "$@"
