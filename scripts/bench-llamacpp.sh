#!/usr/bin/env bash
# CPU A/B against llama.cpp on this machine, on the embedded model (bf16, converted to GGUF by
# llama.cpp's own converter): the reference of docs/cpu-performance.md.
#
# Usage: scripts/bench-llamacpp.sh OUT_DIR [ROUNDS] [THREADS] [MODEL_DIR] [GEN_LEN] [BATCHES]
#   MODEL_DIR: a DeepSeek-V2/V3 checkpoint (default models/sotu-moe, the embedded model);
#   GEN_LEN: decode steps timed per batch size (default 64);
#   BATCHES: decode batch sizes, comma-separated (default 1,4,16; a large model's batch-16 prefill
#   takes minutes).
#
# llama.cpp comes from the npm registry: the node-llama-cpp package carries the llama.cpp source it
# was released with (a git bundle), which is built here for this CPU (cmake, -DGGML_NATIVE=ON;
# llama-bench, llama-batched-bench, llama-simple). Everything goes under .cache/llama.cpp.
# Each round runs, one after the other: llama-bench (prefill of 128 tokens, decode of 64 at
# batch 1), llama-batched-bench (128-token prompts, GEN_LEN decode steps, BATCHES sequences)
# and `ringmaster bench one-batch --batch-size BATCHES --input-len 128 --output-len GEN_LEN`. Before
# the rounds, 32 greedy tokens of both engines are compared. OUT_DIR gets every raw output and
# summary.json (medians per figure). Run it on a quiet machine: both engines use every thread
# they are given, and another process on a core shows up as noise in both.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1" rounds="${2:-5}" threads="${3:-2}" model="${4:-$root/models/sotu-moe}" gen="${5:-64}"
batches="${6:-1,4,16}"
model="$(cd "$model" && pwd)"
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

name="$(basename "$model")"
gguf="$cache/$name-bf16.gguf"
if [ ! -f "$gguf" ] || [ -n "$(find "$model" -name '*.safetensors' -newer "$gguf")" ]; then
  bash "$root/scripts/python-env.sh"
  hf="$cache/$name-hf"
  rm -rf "$hf" && mkdir -p "$hf"
  for f in "$model"/*.json "$model"/*.safetensors; do ln -s "$f" "$hf/"; done
  rm "$hf/config.json" && cp "$model/config.json" "$hf/"
  # transformers' DeepseekV3 routes by sigmoid scores with a correction bias (its config has no
  # field for it); llama.cpp's converter reads the original checkpoints' scoring_func, and without
  # it llama.cpp would route a deepseek_v3 model by softmax.
  "$root/.venv/bin/python" - "$hf/config.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
if c["model_type"] == "deepseek_v3":
    c.setdefault("scoring_func", "sigmoid")
    c.setdefault("topk_method", "noaux_tc")
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
"$bin/llama-simple" -m "$gguf" -n 32 "$prompt" 2>/dev/null > "$out/greedy-llamacpp.txt"
"$root/ringmaster" generate --model "$model" "$prompt" --max-new-tokens 32 --temperature 0 \
  --cpu-threads "$threads" 2>/dev/null > "$out/greedy-ringmaster.txt"
# llama-simple prints special tokens (the BOS, for one) and ringmaster's text leaves them out.
if python3 - "$out/greedy-llamacpp.txt" "$out/greedy-ringmaster.txt" <<'EOF'
import re, sys
a, b = (re.sub(r"<[|\uff5c][^<>]*[|\uff5c]>|\s", "", open(f, errors="replace").read()) for f in sys.argv[1:])
sys.exit(0 if a == b else 1)
EOF
then
  echo "greedy: 32 tokens of '$prompt' equal in both engines" >&2
else
  echo "greedy: the engines differ on '$prompt':" >&2
  cat "$out/greedy-llamacpp.txt" "$out/greedy-ringmaster.txt" >&2
fi

for round in $(seq 1 "$rounds"); do
  "$bin/llama-bench" -m "$gguf" -p 128 -n "$gen" -t "$threads" -r 3 -o jsonl 2>/dev/null \
    > "$out/llama-bench-$round.jsonl"
  "$bin/llama-batched-bench" -m "$gguf" -c 4096 -npp 128 -ntg "$gen" -npl "$batches" -t "$threads" \
    --output-format jsonl 2>/dev/null | grep '^{' > "$out/llama-batched-$round.jsonl"
  "$root/ringmaster" bench one-batch --model "$model" --batch-size "$batches" --input-len 128 --output-len "$gen" \
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
