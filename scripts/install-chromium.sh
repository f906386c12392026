#!/usr/bin/env bash
# Sourced by scripts/test.sh: headless Chromium and its WebDriver for the web page's browser tests
# (tests/service/test_ui.py, Selenium). Installs Debian's chromium and chromium-driver with apt-get
# when either is missing (as root, or through passwordless sudo); does nothing when both are there.
# When they cannot be installed: an error in CI (CI=true), where those tests must run; a warning
# elsewhere (the browser tests then skip).
if command -v chromedriver >/dev/null 2>&1 \
    && { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; }; then
  :
else
  _sudo=""
  [ "$(id -u)" = 0 ] || _sudo="sudo -n"
  echo "installing chromium and chromium-driver (apt-get) for the web page's browser tests" >&2
  if command -v apt-get >/dev/null 2>&1 \
      && $_sudo apt-get update -qq >/dev/null \
      && DEBIAN_FRONTEND=noninteractive $_sudo apt-get install -y -qq chromium chromium-driver >/dev/null; then
    :
  elif [ "${CI:-}" = "true" ] || [ "${CI:-}" = "1" ]; then
    echo "error: could not install chromium and chromium-driver with apt-get (needs root or passwordless sudo on Debian/Ubuntu);" \
      "the browser tests (tests/service/test_ui.py) cannot run without them" >&2
    exit 1
  else
    echo "warning: could not install chromium and chromium-driver (apt-get install chromium chromium-driver, as root);" \
      "the browser tests in tests/service/test_ui.py will be skipped" >&2
  fi
  unset _sudo
fi
