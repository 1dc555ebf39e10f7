#!/usr/bin/env bash
# CPU A/B against llama.cpp on this machine, on the embedded model (bf16, converted to GGUF by
# llama.cpp's own converter): the reference of docs/cpu-performance.md.
#
# Usage: scripts/bench-llamacpp.sh OUT_DIR [ROUNDS] [THREADS]
#
# llama.cpp comes from the npm registry: the node-llama-cpp package carries the llama.cpp source it
# was released with (a git bundle), which is built here for this CPU (cmake, -DGGML_NATIVE=ON;
# llama-bench, llama-batched-bench, llama-simple). Everything goes under .cache/llama.cpp.
# Each round runs, one after the other: llama-bench (prefill of 128 tokens, decode of 64 at
# batch 1), llama-batched-bench (128-token prompts, 64 decode steps, 1, 4 and 16 sequences) and
# `ringmaster bench one-batch --batch-size 1,4,16 --input-len 128 --output-len 64`. Before the
# rounds, 32 greedy tokens of both engines are compared. OUT_DIR gets every raw output and
# summary.json (medians per figure). Run it on a quiet machine: both engines use every thread
# they are given, and another process on a core shows up as noise in both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1" rounds="${2:-5}" threads="${3:-2}"
mkdir -p "$out"
cache="$root/.cache/llama.cpp"
src="$cache/src" bin="$cache/src/build/bin"
mkdir -p "$cache"

if [ ! -x "$bin/llama-batched-bench" ] || [ ! -x "$bin/llama-bench" ] || [ ! -x "$bin/llama-simple" ]; then
  if [ ! -d "$src" ]; then
    echo "llama.cpp: fetching its source (npm package node-llama-cpp@3.22.1)" >&2
    npm install --silent --no-audit --no-fund --ignore-scripts --omit=optional --prefix "$cache/npm" node-llama-cpp@3.22.1
    git clone -q "$cache/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src"
  fi
  echo "llama.cpp: building for this CPU (a few minutes)" >&2
  cmake -S "$src" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF > "$cache/cmake.log"
  cmake --build "$src/build" --target llama-bench llama-batched-bench llama-simple -j "$(nproc)" \
    > "$cache/build.log"
fi

gguf="$cache/sotu-moe-bf16.gguf"
if [ ! -f "$gguf" ] || [ "$root/models/sotu-moe/model.safetensors" -nt "$gguf" ]; then
  bash "$root/scripts/python-env.sh"
  hf="$cache/sotu-moe-hf"
  rm -rf "$hf" && mkdir -p "$hf"
  cp "$root"/models/sotu-moe/{config.json,generation_config.json,model.safetensors,tokenizer.json,tokenizer_config.json} "$hf/"
  # transformers' DeepseekV3 routes by sigmoid scores with a correction bias (its config has no
  # field for it); llama.cpp's converter reads the original checkpoints' scoring_func, and without
  # it llama.cpp would route by softmax.
  "$root/.venv/bin/python" - "$hf/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["scoring_func"] = "sigmoid"
c["topk_method"] = "noaux_tc"
json.dump(c, open(sys.argv[1], "w"), indent=2)
EOF
  # The converter knows pre-tokenizers by a hash of their output; this tokenizer splits as
  # DeepSeek-V3's does (the same regexes), under another hash.
  "$root/.venv/bin/python" - "$src" "$hf" --outtype bf16 --outfile "$gguf" > "$cache/convert.log" 2>&1 <<'EOF'
import runpy, sys
src = sys.argv[1]
sys.path[:0] = [src, src + "/gguf-py"]
import conversion.base as base
known = base.TextModel.get_vocab_base_pre
def pre(self, tokenizer):
    try:
        return known(self, tokenizer)
    except NotImplementedError:
        return "deepseek-v3"
base.TextModel.get_vocab_base_pre = pre
sys.argv = [src + "/convert_hf_to_gguf.py"] + sys.argv[2:]
runpy.run_path(src + "/convert_hf_to_gguf.py", run_name="__main__")
EOF
fi

prompt="We the people"
"$bin/llama-simple" -m "$gguf" -n 32 "$prompt" 2>/dev/null | sed 's/^<|bos|>//' > "$out/greedy-llamacpp.txt"
"$root/ringmaster" generate "$prompt" --max-new-tokens 32 --temperature 0 --cpu-threads "$threads" \
  2>/dev/null > "$out/greedy-ringmaster.txt"
if diff -q <(tr -d '\n' < "$out/greedy-llamacpp.txt") <(tr -d '\n' < "$out/greedy-ringmaster.txt") > /dev/null; then
  echo "greedy: 32 tokens of '$prompt' equal in both engines" >&2
else
  echo "greedy: the engines differ on '$prompt':" >&2
  cat "$out/greedy-llamacpp.txt" "$out/greedy-ringmaster.txt" >&2
fi

for round in $(seq 1 "$rounds"); do
  "$bin/llama-bench" -m "$gguf" -p 128 -n 64 -t "$threads" -r 3 -o jsonl 2>/dev/null \
    > "$out/llama-bench-$round.jsonl"
  "$bin/llama-batched-bench" -m "$gguf" -c 4096 -npp 128 -ntg 64 -npl 1,4,16 -t "$threads" \
    --output-format jsonl 2>/dev/null | grep '^{' > "$out/llama-batched-$round.jsonl"
  "$root/ringmaster" bench one-batch --batch-size 1,4,16 --input-len 128 --output-len 64 \
    --cpu-threads "$threads" --json 2>/dev/null > "$out/ringmaster-$round.json"
  echo "round $round of $rounds done (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
figs = {}
def add(key, value):
    figs.setdefault(key, []).append(round(value, 1))
for r in range(1, rounds + 1):
    for line in open(f"{out}/llama-bench-{r}.jsonl"):
        d = json.loads(line)
        add("llama.cpp prefill 1x128" if d["n_prompt"] else "llama.cpp decode b1 (llama-bench)", d["avg_ts"])
    for line in open(f"{out}/llama-batched-{r}.jsonl"):
        d = json.loads(line)
        add(f"llama.cpp decode b{d['pl']} (batched-bench)", d["speed_tg"])
    for res in json.load(open(f"{out}/ringmaster-{r}.json"))["results"]:
        b = res["batch_size"]
        add(f"ringmaster decode b{b}", res["decode_tokens_per_s"])
        if b == 1:
            add("ringmaster prefill 1x128", res["prefill_tokens_per_s"])
summary = {k: {"median": statistics.median(v), "runs": v} for k, v in figs.items()}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
for k, v in summary.items():
    print(f"{k:40s} {v['median']:9.1f}  {v['runs']}")
EOF
