#!/usr/bin/env bash
# Alternating A/B runs of `bench serve` against `serve` configurations on this machine: each round
# starts a fresh server per configuration, runs the same bench command against it, and stops it.
# Usage: scripts/bench-prefix-cache.sh OUT_DIR ROUNDS "BENCH FLAGS" NAME="SERVE FLAGS" [NAME="SERVE FLAGS"...]
# Results: OUT_DIR/NAME.jsonl (one bench serve JSON line per round), server logs beside them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1" rounds="$2" bench="$3"
shift 3
mkdir -p "$out"
port=31000
for round in $(seq 1 "$rounds"); do
  for variant in "$@"; do
    name="${variant%%=*}" flags="${variant#*=}"
    log="$out/$name-$round.log"
    # shellcheck disable=SC2086
    "$root/ringmaster" serve --port "$port" $flags > "$log" 2>&1 &
    server=$!
    for _ in $(seq 1 600); do
      grep -q "serving at" "$log" && break
      kill -0 "$server" 2>/dev/null || { echo "server $name exited: $(tail -3 "$log")" >&2; exit 1; }
      sleep 0.2
    done
    # shellcheck disable=SC2086
    "$root/ringmaster" bench serve --backend sglang --port "$port" $bench --disable-tqdm --json \
      --tag "$name" >> "$out/$name.jsonl"
    kill "$server"
    wait "$server" || true
    echo "round $round $name done" >&2
  done
done
