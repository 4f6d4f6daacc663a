#!/usr/bin/env bash
# Installs the npm MCP tools the tests drive: the reference server
# @modelcontextprotocol/server-everything and the MCP Inspector CLI. Versions are pinned
# so a CI run never tests against a server it did not choose. Skips what is present.
# Installs into $LOOPWRIGHT_NODE_TOOLS (default ~/.cache/loopwright/node-tools); the
# tests look there (tests/mcp/conftest.py).
set -euo pipefail
PREFIX="${LOOPWRIGHT_NODE_TOOLS:-$HOME/.cache/loopwright/node-tools}"
PACKAGES=(
    "@modelcontextprotocol/server-everything@2026.8.31"
    "@modelcontextprotocol/inspector@2.12.0"
)
if ! command -v npm >/dev/null 2>&1; then
    echo "install-node-tools: npm not found; install Node.js 20+ (apt-get install nodejs npm)" >&2
    exit 1
fi
mkdir -p "$PREFIX"
missing=()
for spec in "${PACKAGES[@]}"; do
    name="${spec%@*}"
    version="${spec##*@}"
    manifest="$PREFIX/node_modules/$name/package.json"
    if [[ -f "$manifest" ]] && grep -q "\"version\": *\"$version\"" "$manifest"; then
        continue
    fi
    missing+=("$spec")
done
if ((${#missing[@]})); then
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${missing[@]}"
fi
echo "install-node-tools: ready in $PREFIX"
