#!/usr/bin/env bash
# The HTML report's browser tests (tests/test_report.py, marked needs_browser) need Debian's
# chromium and chromium-driver. `make test` runs this twice:
#   scripts/browser.sh install   before the tests: install them when missing, as root with
#                                apt-get (CI, a container), as .ci/run did
#   scripts/browser.sh check     after the tests: when still missing, name the tests that were
#                                skipped and the one command that installs them
set -uo pipefail
INSTALL="sudo apt-get install -y chromium chromium-driver"
have() { { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; } && command -v chromedriver >/dev/null; }
case "${1:-}" in
  install)
    have && exit 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -q >/dev/null &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium chromium-driver >/dev/null ||
        echo "browser: apt-get could not install chromium and chromium-driver; the browser tests will be skipped" >&2
    fi
    ;;
  check)
    have && exit 0
    echo "make test: skipped the browser tests of tests/test_report.py (the HTML report in headless Chromium):" \
      "chromium and chromedriver are not installed; install them with: $INSTALL (then run make test again)" >&2
    ;;
  *)
    echo "usage: scripts/browser.sh install|check" >&2
    exit 2
    ;;
esac
exit 0
