#!/usr/bin/env bash
# Creates .venv (ignored by git) with the Python reference tools: CPU torch, transformers, safetensors,
# tokenizers. Uses pip's configured indexes; where pip is set up with local mirror indexes (as on the
# project's CPU machines), the first is passed as --index-url so that nothing waits on the network.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ] && .venv/bin/python -c 'import torch, transformers, safetensors, tokenizers' 2>/dev/null; then
  exit 0
fi
python3 -m venv .venv
args=()
indexes=$(pip config get global.extra-index-url 2>/dev/null || true)
if [ -n "$indexes" ]; then
  read -r first rest <<<"$indexes"
  args+=(--index-url "$first")
  for extra in $rest; do args+=(--extra-index-url "$extra"); done
fi
links=$(pip config get global.find-links 2>/dev/null || true)
[ -n "$links" ] && args+=(--find-links "$links")
.venv/bin/pip install -q "${args[@]}" torch transformers safetensors tokenizers numpy
.venv/bin/python -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
