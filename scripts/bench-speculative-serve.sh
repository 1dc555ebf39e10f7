#!/usr/bin/env bash
# Speculative decoding in `serve` over a concurrency sweep: `bench serve` against one server per
# setting (speculation off, always with K drafts, auto), the settings' sweeps alternating.
# Usage: scripts/bench-speculative-serve.sh OUT ROUNDS [DATASET] [CONCURRENCIES] [SETTINGS]
#   OUT            folder for the bench results (results.jsonl), server logs and summary.json
#   ROUNDS         sweeps of every setting, in alternating order (the order reverses each round)
#   DATASET        repetitive (default; a text the model continues by repeating it, NGRAM's case)
#                  or random (random-ids prompts, where n-gram drafts are rarely right)
#   CONCURRENCIES  default "1 2 4 8 16 32 64 128"
#   SETTINGS       default "off always-2 always-3 always-4 auto-4"
# Every request is greedy (temperature 0) with 128 output tokens; the prefix cache is flushed
# before each run. summary.json has each setting's median output tok/s per concurrency, its ratio
# to "off", and auto's share of the best fixed setting's gain where a fixed setting beats off.
set -euo pipefail
out=$1; rounds=$2; dataset=${3:-repetitive}
concurrencies=${4:-"1 2 4 8 16 32 64 128"}
settings=${5:-"off always-2 always-3 always-4 auto-4"}
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port=${RINGMASTER_BENCH_PORT:-31017}
mkdir -p "$out"

python3 - "$out/repetitive.json" <<'PY'
# Prompts of three clauses of Article I, Section 8 of the US Constitution (in a seeded random
# order), then the opening and the first clause again: the model continues by repeating them.
import json, random, sys
clauses = [
    "To lay and collect Taxes, Duties, Imposts and Excises, to pay the Debts and provide for the common Defence and general Welfare of the United States",
    "To borrow Money on the credit of the United States",
    "To regulate Commerce with foreign Nations, and among the several States, and with the Indian Tribes",
    "To establish an uniform Rule of Naturalization, and uniform Laws on the subject of Bankruptcies throughout the United States",
    "To coin Money, regulate the Value thereof, and of foreign Coin, and fix the Standard of Weights and Measures",
    "To provide for the Punishment of counterfeiting the Securities and current Coin of the United States",
    "To establish Post Offices and post Roads",
    "To constitute Tribunals inferior to the supreme Court",
    "To declare War, grant Letters of Marque and Reprisal, and make Rules concerning Captures on Land and Water",
    "To raise and support Armies",
    "To provide and maintain a Navy",
    "To make Rules for the Government and Regulation of the land and naval Forces",
]
rng = random.Random(7)
rows = []
for i in range(512):
    picked = rng.sample(clauses, 3)
    text = ("The Congress shall have Power " + "; ".join(picked)
            + "; The Congress shall have Power " + picked[0])
    rows.append({"id": str(i), "conversations": [
        {"from": "human", "value": text}, {"from": "gpt", "value": "x"}]})
json.dump(rows, open(sys.argv[1], "w"))
PY

case "$dataset" in
  repetitive) data=(--dataset-name sharegpt --dataset-path "$out/repetitive.json" --sharegpt-output-len 128) ;;
  random) data=(--dataset-name random-ids --random-input-len 128 --random-output-len 128 --random-range-ratio 1) ;;
  *) echo "DATASET must be repetitive or random, got $dataset" >&2; exit 2 ;;
esac

server_flags() {
  case "$1" in
    off) ;;
    always-* | auto-*) echo --speculative-algorithm NGRAM --speculative-policy "${1%%-*}" --speculative-num-draft-tokens "${1#*-}" ;;
    *) echo "unknown setting $1" >&2; exit 2 ;;
  esac
}

read -r -a order <<<"$settings"
for r in $(seq "$rounds"); do
  for s in "${order[@]}"; do
    log="$out/server-$s-$r.log"
    # shellcheck disable=SC2046
    "$here/ringmaster" serve --port "$port" $(server_flags "$s") > "$log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do curl -sf "localhost:$port/health" > /dev/null && break; sleep 1; done
    curl -sf "localhost:$port/health" > /dev/null || { echo "server for $s did not come up; see $log" >&2; kill "$pid"; exit 1; }
    for c in $concurrencies; do
      n=$(( c * 2 > 32 ? c * 2 : 32 ))
      "$here/ringmaster" bench serve --port "$port" --backend sglang "${data[@]}" \
        --extra-request-body '{"temperature":0}' --num-prompts "$n" --max-concurrency "$c" \
        --flush-cache --disable-tqdm --tag "$s round $r" --output-file "$out/results.jsonl" \
        > "$out/bench-$s-$r-c$c.txt" 2>&1
      echo "round $r $s c=$c: $(grep 'Output token throughput' "$out/bench-$s-$r-c$c.txt" | awk '{print $NF}') tok/s, accept $(grep 'Accept length' "$out/bench-$s-$r-c$c.txt" | awk '{print $NF}')" >&2
    done
    kill "$pid"; wait "$pid" || true
  done
  # reverse the order for the next round, so no setting always runs first or last
  for (( i = 0, j = ${#order[@]} - 1; i < j; i++, j-- )); do t=${order[i]}; order[i]=${order[j]}; order[j]=$t; done
done

python3 - "$out" <<'PY'
import collections, json, statistics, sys
out = sys.argv[1]
runs = collections.defaultdict(list)
for line in open(f"{out}/results.jsonl"):
    r = json.loads(line)
    runs[(r["tag"].split(" round ")[0], r["max_concurrency"])].append(r["output_throughput"])
med = {k: statistics.median(v) for k, v in runs.items()}
settings = sorted({s for s, _ in runs}, key=lambda s: (s != "off", s))
concurrencies = sorted({c for _, c in runs})
fixed = [s for s in settings if s.startswith("always")]
summary = {"settings": settings, "concurrencies": concurrencies,
           "output_tok_s": {s: {c: round(med[(s, c)]) for c in concurrencies} for s in settings},
           "vs_off": {s: {c: round(med[(s, c)] / med[("off", c)], 3) for c in concurrencies}
                      for s in settings},
           "auto_share_of_best_gain": {}}
for a in [s for s in settings if s.startswith("auto")]:
    share = summary["auto_share_of_best_gain"][a] = {}
    for c in concurrencies:
        off, best = med[("off", c)], max((med[(s, c)] for s in fixed), default=0)
        if best > off:
            share[c] = round((med[(a, c)] - off) / (best - off), 2)
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print("setting      " + " ".join(f"{c:>7}" for c in concurrencies))
for s in settings:
    print(f"{s:<12} " + " ".join(f"{summary['output_tok_s'][s][c]:>7}" for c in concurrencies))
for s in settings:
    print(f"{s + '/off':<12} " + " ".join(f"{summary['vs_off'][s][c]:>7.3f}" for c in concurrencies))
print("auto share of best fixed gain:", summary["auto_share_of_best_gain"])
PY
