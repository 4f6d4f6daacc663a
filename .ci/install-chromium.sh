#!/usr/bin/env bash
# Installs Debian's chromium for the trace viewer's browser test (tests/tracing).
# Playwright drives it through executable_path=/usr/bin/chromium: Playwright's own browser
# download is not reachable from CI. The Python side (the `playwright` package) comes from
# the `test` extra. Idempotent: does nothing when chromium is already installed.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
chromium --version
