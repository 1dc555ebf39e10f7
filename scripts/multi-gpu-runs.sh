#!/usr/bin/env bash
# The multi-GPU runs (2-8 GPUs of one host), each step logged under $OUT, results appended to
# $OUT/history.jsonl; a failing step is logged and the next one still runs.
#
#   scripts/multi-gpu-runs.sh DIR [STEP...]     DIR: packed by `scripts/gpu-tests.sh pack DIR`
#
# Steps (all by default): correctness, nodes, collectives, scaling, simulate.
#   correctness  the tensor/expert-parallel GPU tests (unless SKIP_TP_TESTS=1), then greedy tokens
#                of the CLI at --tp-size 2/4/8 (and --ep-size with both all-to-all backends) against
#                --tp-size 1, on a golden fixture and on a random DeepSeek-V2-Lite-shaped model (32
#                tokens), and the logits of every step with TP 1's tokens forced (compare-logits,
#                bf16 tolerance 2e-2 of the largest logit)
#   nodes        two JVMs with one GPU each (--nnodes 2 over 127.0.0.1) against one JVM at TP 2
#   collectives  bench collectives (every algorithm) at world sizes 2/4/8, 1 KiB to 256 MiB, over
#                NVLink (launched one by one, and replayed from CUDA graphs) and again with
#                NCCL_P2P_DISABLE=1; JSON (plot it with bench collectives --from-json F --plot P)
#   scaling      bench one-batch --profile of the V2-Lite shape and a 5-layer GLM-5 shape at TP
#                1/2/4/8 (per allreduce choice) and EP 2/4/8 (both MoE backends), batch 1/8/32;
#                the scaling table is printed here, the plot drawn elsewhere:
#                  ringmaster bench scaling --from-json $(ls OUT/onebatch-*.json | paste -sd,) --plot P
#   simulate     simulate calibrate + check on the collectives and one-batch JSON of this run
#
# Environment: OUT (default ./multi-gpu-out), SIZES (world sizes above 1, default "2 4 8", those
# the visible GPUs allow), STEP_TIMEOUT (seconds a step may run, default 600),
# OPS (collectives to bench, default all four), P2P_MODES (default "nvlink host"), SCALING_MODELS
# (default "v2lite glm5-5l"), CHOICES (allreduce choices above TP 1, default "auto nccl oneshot
# twoshot"), JRE_ARCHIVE as for gpu-tests.sh, MODELS (where the random models go,
# default /tmp/ringmaster-models; the V2-Lite shape needs ~32 GB of disk).
set -uo pipefail
dir=${1:?usage: multi-gpu-runs.sh DIR [correctness|nodes|collectives|scaling|simulate ...]}
shift
steps=("$@")
[[ ${#steps[@]} -gt 0 ]] || steps=(correctness nodes collectives scaling simulate)
cd "$(dirname "$0")/.."
out=${OUT:-multi-gpu-out}
models=${MODELS:-/tmp/ringmaster-models}
mkdir -p "$out" "$models"
# NVLink multicast stays off in every process: a multicast object left behind can take a shared
# host's GPUs out of service.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [[ -n ${JRE_ARCHIVE:-} ]]; then  # unpack once, not in every gpu-tests.sh call
  mkdir -p /tmp/ringmaster-jre && tar xJf "$JRE_ARCHIVE" -C /tmp/ringmaster-jre
  JAVA_HOME=$(dirname "$(dirname "$(find /tmp/ringmaster-jre -path '*/bin/java' | head -1)")")
  export JAVA_HOME
  unset JRE_ARCHIVE
fi
gpus=$(nvidia-smi -L | wc -l)
sizes=()
for n in ${SIZES:-2 4 8}; do ((n <= gpus)) && sizes+=("$n"); done
echo "GPUs: $gpus; world sizes: ${sizes[*]}; logs in $out" | tee -a "$out/summary.txt"
nvidia-smi topo -m > "$out/topology.txt" 2>&1
cli=(scripts/gpu-tests.sh cli "$dir")
# A step that hangs (a collective waiting for a peer that died) is killed after STEP_TIMEOUT seconds
# so that the steps after it still run.
step_timeout=${STEP_TIMEOUT:-600}
step() {  # step NAME COMMAND...: runs it, logs it, records its exit status in the summary
  local name=$1
  shift
  local t0=$SECONDS
  timeout -k 10 "$step_timeout" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: rc=$rc, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  return $rc
}
step_json() {  # step_json NAME COMMAND...: as step, with stdout in NAME.json and stderr in NAME.log
  local name=$1
  shift
  local t0=$SECONDS
  timeout -k 10 "$step_timeout" "$@" > "$out/$name.json" 2> "$out/$name.log"
  local rc=$?
  echo "$name: rc=$rc, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  return $rc
}
ids() { grep -o '"output_ids" *: *\[[^]]*\]' "$1" | head -1; }
same_ids() {  # same_ids WHAT REFERENCE_LOG LOG
  if [[ -n $(ids "$2") && "$(ids "$2")" == "$(ids "$3")" ]]; then
    echo "$1: same tokens as the reference" | tee -a "$out/summary.txt"
  else
    echo "$1: DIFFERENT tokens: $(ids "$3") vs $(ids "$2")" | tee -a "$out/summary.txt"
  fi
}
v2lite=$models/v2lite
random_model() {  # random_model TAG: makes the random model $models/TAG unless it is there
  [[ -f $models/$1/config.json ]] && return 0
  case $1 in
  v2lite)
    step model-v2lite "${cli[@]}" model random --config configs/deepseek-v2-lite.json --dtype bf16 \
      --out "$models/v2lite"
    ;;
  glm5-5l)
    # GLM-5's widths as a deepseek_v3 model (dense attention, which is what GLM-5's sparse
    # attention computes up to its index_topk of 2048 tokens), 5 layers: the 3 dense layers and 2
    # MoE layers (~45 GB in bf16).
    step model-glm5 "${cli[@]}" model random --config configs/glm5-shape-5-layers.json --dtype bf16 \
      --out "$models/glm5-5l"
    ;;
  esac
}
gen=(generate --device cuda --prompt-ids 1,2,3,4,5 --max-new-tokens 32 --temperature 0 --ignore-eos --json)

for s in "${steps[@]}"; do
  case $s in
  correctness)
    [[ ${SKIP_TP_TESTS:-0} == 1 ]] || step tp-tests scripts/gpu-tests.sh tp "$dir"
    random_model v2lite
    for m in fixtures/golden/deepseek_v3_bf16 "$v2lite"; do
      tag=$(basename "$m")
      step "gen-$tag-tp1" "${cli[@]}" "${gen[@]}" --model "$m" --tp-size 1 \
        --dump-logits "$out/gen-$tag-tp1.npy"
      # Teacher forcing: every run is also fed TP 1's tokens, so its logits can be compared with
      # TP 1's at all 32 steps even where a near-tie makes the free-running tokens part.
      forced=$(ids "$out/gen-$tag-tp1.log" | grep -o '\[.*\]' | tr -d '[] ')
      for n in "${sizes[@]}"; do
        configs=("tp$n:--tp-size $n" "ep$n-none:--tp-size $n --ep-size $n --moe-a2a-backend none"
          "ep$n-all-to-all:--tp-size $n --ep-size $n --moe-a2a-backend all-to-all")
        for c in "${configs[@]}"; do
          name=${c%%:*}
          read -ra flags <<< "${c#*:}"
          step "gen-$tag-$name" "${cli[@]}" "${gen[@]}" --model "$m" "${flags[@]}" &&
            same_ids "$tag $name" "$out/gen-$tag-tp1.log" "$out/gen-$tag-$name.log"
          step "gen-$tag-$name-forced" "${cli[@]}" "${gen[@]}" --model "$m" "${flags[@]}" \
            --force-ids "$forced" --dump-logits "$out/gen-$tag-$name-forced.npy"
          step_json "logits-$tag-$name" "${cli[@]}" compare-logits "$out/gen-$tag-tp1.npy" \
            "$out/gen-$tag-$name-forced.npy" --rtol 0.02 --min-margin 0.05 --json
          echo "$tag $name logits: $(head -c 300 "$out/logits-$tag-$name.json" | tr -d '\n')" |
            tee -a "$out/summary.txt"
        done
      done
    done
    ;;
  nodes)
    m=fixtures/golden/deepseek_v3_bf16
    step nodes-tp2 "${cli[@]}" "${gen[@]}" --model "$m" --tp-size 2
    port=$((29500 + RANDOM % 1000))
    CUDA_VISIBLE_DEVICES=1 timeout -k 10 "$step_timeout" scripts/gpu-tests.sh cli "$dir" "${gen[@]}" --model "$m" --tp-size 2 \
      --nnodes 2 --node-rank 1 --dist-init-addr "127.0.0.1:$port" > "$out/nodes-rank1.log" 2>&1 &
    follower=$!
    CUDA_VISIBLE_DEVICES=0 step nodes-rank0 "${cli[@]}" "${gen[@]}" --model "$m" --tp-size 2 --nnodes 2 \
      --node-rank 0 --dist-init-addr "127.0.0.1:$port"
    wait "$follower"
    echo "nodes-rank1: rc=$?" | tee -a "$out/summary.txt"
    same_ids "two nodes" "$out/nodes-tp2.log" "$out/nodes-rank0.log"
    ;;
  collectives)
    # Plots are drawn afterwards on a machine with a display toolkit (the packed runtime has none):
    #   ringmaster bench collectives --from-json F.json --plot F.png
    for n in "${sizes[@]}"; do
      for p2p in ${P2P_MODES:-nvlink host}; do
        env_p2p=()
        [[ $p2p == host ]] && env_p2p=(env NCCL_P2P_DISABLE=1)
        for op in ${OPS:-allreduce allgather reducescatter alltoall}; do
          for mode in stream graph; do
            graph=()
            [[ $mode == graph ]] && graph=(--cuda-graph)
            # Host-memory NCCL is only timed as nccl-tests does (no graphs).
            [[ $mode == graph && $p2p == host ]] && continue
            step_json "coll-$op-ws$n-$p2p-$mode" "${env_p2p[@]}" "${cli[@]}" bench collectives \
              --device cuda --world-size "$n" --op "$op" --min-bytes 1024 --max-bytes 268435456 \
              "${graph[@]}" --json --history "$out/history.jsonl"
          done
        done
      done
    done
    ;;
  scaling)
    for tag in ${SCALING_MODELS:-v2lite glm5-5l}; do
      random_model "$tag"
      m=$models/$tag
      for n in 1 "${sizes[@]}"; do
        choices=(auto)
        ((n > 1)) && read -ra choices <<< "${CHOICES:-auto nccl oneshot twoshot}"
        runs=()
        for ar in "${choices[@]}"; do runs+=("tp$n-$ar:--tp-size $n --allreduce $ar"); done
        # Expert parallelism at the same degree, both MoE backends (attention stays TP).
        ((n > 1)) && runs+=("ep$n-none:--tp-size $n --ep-size $n --moe-a2a-backend none"
          "ep$n-all-to-all:--tp-size $n --ep-size $n --moe-a2a-backend all-to-all")
        for r in "${runs[@]}"; do
          read -ra flags <<< "${r#*:}"
          # --profile: one eager step per batch size is timed by op group, which gives the share
          # of a step spent in collectives (profile_ms in the JSON).
          step_json "onebatch-$tag-${r%%:*}" "${cli[@]}" bench one-batch --device cuda --model "$m" \
            "${flags[@]}" --batch-size 1,8,32 --input-len 512 --output-len 128 --profile --json \
            --history "$out/history.jsonl"
        done
      done
    done
    # the runs that wrote their JSON (a failed run leaves an empty file)
    step scaling-table "${cli[@]}" bench scaling --from-json \
      "$(find "$out" -name 'onebatch-*.json' -size +0 | sort | paste -sd, -)"
    ;;
  simulate)
    files=$(ls "$out"/coll-allreduce-*-nvlink-graph.json "$out"/onebatch-v2lite-tp*.json 2>/dev/null |
      paste -sd, -)
    step simulate-calibrate "${cli[@]}" simulate calibrate --measurements "$files" --base-profile h200-x8 \
      --model-config configs/deepseek-v2-lite.json --output "$out/h200-this-host.json" --report \
      --history "$out/history.jsonl"
    ;;
  *)
    echo "unknown step $s (correctness, nodes, collectives, scaling, simulate)" >&2
    exit 2
    ;;
  esac
done
# One archive of everything (a device tool may return only a few loose files).
tar czf "$out.tgz" --exclude='*.npy' -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null &&
  echo "archive: $out.tgz"
echo "done; summary in $out/summary.txt"
