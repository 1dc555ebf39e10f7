#!/usr/bin/env bash
# Speculative decoding against plain decoding on the CPU, whole `generate` processes, alternating.
# Usage: scripts/bench-speculative.sh OUT ROUNDS K [ROOT...]
#   OUT     folder for the runs' JSON and summary.json
#   ROUNDS  alternating pairs (plain, then NGRAM with K drafts) per checkout
#   ROOT    checkouts to run (default: this one); with several, their pairs alternate too (A/B)
# Prompt: three clauses of Article I, Section 8 of the US Constitution and the start of a fourth,
# a text the embedded model continues by repeating itself (NGRAM's case); 200 greedy tokens.
set -euo pipefail
out=$1; rounds=$2; k=$3; shift 3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
roots=("$@"); [ ${#roots[@]} -eq 0 ] && roots=("$here")
mkdir -p "$out"
prompt="The Congress shall have Power To lay and collect Taxes, Duties, Imposts and Excises, to pay the Debts and provide for the common Defence and general Welfare of the United States; but all Duties, Imposts and Excises shall be uniform throughout the United States; To borrow Money on the credit of the United States; To regulate Commerce with foreign Nations, and among the several States, and with the Indian Tribes; The Congress shall have Power To"
for r in $(seq "$rounds"); do
  for i in "${!roots[@]}"; do
    for mode in plain ngram; do
      flags=()
      [ "$mode" = ngram ] && flags=(--speculative-algorithm NGRAM --speculative-num-draft-tokens "$k")
      f="$out/root$i-$mode-$r.json"
      timeout 300 "${roots[$i]}/ringmaster" generate "$prompt" --max-new-tokens 200 --temperature 0 \
        --ignore-eos --json "${flags[@]}" > "$f" 2> "$f.log"
      echo "round $r root$i $mode: $(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['decode_tokens_per_s']))" "$f") tok/s" >&2
    done
  done
done
python3 - "$out" "$rounds" "${#roots[@]}" <<'PY'
import json, statistics, sys
out, rounds, nroots = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
summary = {}
for i in range(nroots):
    plain, spec, ratios, same, accept = [], [], [], True, None
    for r in range(1, rounds + 1):
        p = json.load(open(f"{out}/root{i}-plain-{r}.json"))
        s = json.load(open(f"{out}/root{i}-ngram-{r}.json"))
        plain.append(p["decode_tokens_per_s"]); spec.append(s["decode_tokens_per_s"])
        ratios.append(spec[-1] / plain[-1]); accept = s["speculative"]["accept_length"]
        ref = json.load(open(f"{out}/root0-plain-1.json"))["output_ids"]
        same = same and p["output_ids"] == ref and s["output_ids"] == ref
    summary[f"root{i}"] = {
        "plain_tok_s": [round(x) for x in plain], "ngram_tok_s": [round(x) for x in spec],
        "pair_ratios": [round(x, 2) for x in ratios],
        "median_of_pair_ratios": round(statistics.median(ratios), 2),
        "ratio_of_medians": round(statistics.median(spec) / statistics.median(plain), 2),
        "accept_length": round(accept, 3), "same_tokens": same}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
