#!/usr/bin/env bash
# GPU tests and kernel benchmarks on a machine with an NVIDIA GPU but no Maven (and perhaps no JDK).
#
#   scripts/gpu-tests.sh pack DIR          on a build machine: compile the CUDA module and its tests,
#                                          then put classes, fatbin and every jar the tests need in DIR
#   scripts/gpu-tests.sh test DIR [ARGS]   on the GPU machine: run the tests tagged "gpu" (ARGS go to
#                                          JUnit's ConsoleLauncher, e.g. --select-class=...)
#   scripts/gpu-tests.sh tp DIR [ARGS]     on the GPU machine: the tensor/expert-parallel model tests
#                                          (one rank through the parallel path with NCCL, two ranks
#                                          sharing GPU 0, two GPUs where there are two), the
#                                          single-GPU model tests they compare with, the all-to-all
#                                          dispatch kernels and the one-GPU test communicator
#   scripts/gpu-tests.sh bench DIR [pdl | rows | router | mla B L | mlafused | prefill | gqa | sampling | fp8 | dsa | dsascores [B L ...] | dsatopk]
#                                          on the GPU machine: print the kernel benchmark table
#                                          (pdl: only the programmatic dependent launch rows;
#                                          rows: only the GEMV / expert down-projection variants,
#                                          rows per warp and split-K; router: a one-token MoE
#                                          router taken apart;
#                                          mla B L: only MLA decode of batch B at context L,
#                                          e.g. under ncu; mlafused: the fused MLA decode launch
#                                          against the separate kernels; prefill: only the MLA
#                                          prefill paths; gqa: only the grouped-query
#                                          attention kernels; sampling: only the device sampler;
#                                          fp8: only the FP8 routed-expert kernels; dsa: only
#                                          the DeepSeek Sparse Attention kernels, GLM-5 shape;
#                                          dsascores: only its indexer scores, streaming and
#                                          tiled reference kernels side by side (B L ...: only
#                                          those batch/context pairs); dsatopk: only its
#                                          candidate top-k, both first-pass bins, with the rows'
#                                          candidate counts)
#   scripts/gpu-tests.sh collectives DIR [KEY=VALUE...]
#                                          on the GPU machine: topology, AUTO table, and the
#                                          collective benchmark over NCCL and the peer kernels
#                                          (keys of dev.ringmaster.cuda.bench.DeviceCollectiveBench)
#   scripts/gpu-tests.sh cli DIR ARGS      on the GPU machine: run the ringmaster CLI (e.g. generate,
#                                          bench one-batch, model random) with the packed classes
#
# test and bench use $JAVA_HOME or java on the PATH; with JRE_ARCHIVE=path/to/jre.txz (a tar.xz of a
# Java 25 runtime whose top folder holds bin/java) they unpack that first. REPORTS_DIR (default
# DIR/reports) receives the JUnit XML reports; JUNIT_DETAILS=testfeed prints each test as it ends
# (the default tree comes only at the end, so a run cut off by a timeout would print nothing).
set -euo pipefail
mode=${1:?usage: gpu-tests.sh pack|test|tp|bench|collectives|cli DIR}
dir=${2:?usage: gpu-tests.sh pack|test|tp|bench|collectives|cli DIR}
shift 2
junit_console_version=6.1.3
jvm_flags=(--enable-native-access=ALL-UNNAMED --add-modules jdk.incubator.vector -Xmx16g)

case $mode in
pack)
  cd "$(dirname "$0")/.."
  source scripts/env.sh
  mvn -B -q -ntp -pl ringmaster-cuda -am test-compile dependency:build-classpath \
    -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
  mvn -B -q -ntp -pl ringmaster-cli -am package -DskipTests -Dspotless.check.skip=true
  rm -rf "$dir"
  mkdir -p "$dir/classes" "$dir/lib" "$dir/cli"
  # The CLI's classes and runtime jars (ringmaster-core, -cuda with the fatbin, -tools, ...) serve the
  # tests, the kernel benchmark and cli mode; lib/ keeps only the test-only jars, so the pack stays
  # small enough to travel.
  cp -r ringmaster-cli/target/classes "$dir/cli/classes"
  cp -r ringmaster-cli/target/lib "$dir/cli/lib"
  cp -r ringmaster-cuda/target/test-classes "$dir/classes/cuda-test"
  tr ':' '\n' < ringmaster-cuda/target/test-classpath.txt | grep '\.jar$' | grep -v '/ringmaster-core/' |
    while read -r jar; do
      [[ -e "$dir/cli/lib/$(basename "$jar")" ]] || cp "$jar" "$dir/lib/"
    done
  mvn -B -q -ntp dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$junit_console_version \
    -DoutputDirectory="$dir/console"
  du -sh "$dir"
  ;;
test | tp | bench | collectives | cli)
  if [[ -n ${JRE_ARCHIVE:-} ]]; then
    mkdir -p /tmp/ringmaster-jre
    tar xJf "$JRE_ARCHIVE" -C /tmp/ringmaster-jre
    JAVA_HOME=$(dirname "$(dirname "$(find /tmp/ringmaster-jre -path '*/bin/java' | head -1)")")
  fi
  java=${JAVA_HOME:+$JAVA_HOME/bin/}java
  # A bench pack (scripts/bench-pack.sh) has no test jars in lib/.
  cp="$(ls "$dir"/cli/lib/*.jar "$dir"/lib/*.jar 2>/dev/null | tr '\n' ':' || true)"
  # NVLink multicast stays off unless asked for: a multicast object left behind can take a shared
  # host's GPUs out of service.
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  if [[ $mode == cli ]]; then
    exec "$java" "${jvm_flags[@]}" -XX:+UseParallelGC -cp "$dir/cli/classes:$dir/cli/lib/*" \
      dev.ringmaster.cli.Main "$@"
  fi
  if [[ $mode == bench ]]; then
    exec "$java" "${jvm_flags[@]}" -cp "$cp" dev.ringmaster.cuda.bench.KernelBench "$@"
  fi
  if [[ $mode == collectives ]]; then
    exec "$java" "${jvm_flags[@]}" -cp "$cp" dev.ringmaster.cuda.bench.DeviceCollectiveBench "$@"
  fi
  if [[ $mode == tp ]]; then
    set -- --include-classname '.*(TensorParallel|CudaCausalLm|ExpertDispatch|SameDeviceCommunicator|MultiGpuCollectives).*' "$@"
  fi
  # Some tests run the embedded model, committed bzip2-compressed; the Maven build unpacks it, and
  # a GPU machine without Maven unpacks it here, beside the .bz2 (run from the repository root).
  for z in models/sotu-moe/model.safetensors.bz2 models/sotu-moe/*/model.safetensors.bz2; do
    if [[ -f $z && ! -f ${z%.bz2} ]]; then
      python3 -c 'import bz2, shutil, sys; shutil.copyfileobj(bz2.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
        "$z" "${z%.bz2}"
    fi
  done
  reports=${REPORTS_DIR:-$dir/reports}
  mkdir -p "$reports"
  exec "$java" "${jvm_flags[@]}" -jar "$dir"/console/junit-platform-console-standalone-*.jar execute \
    --class-path "$dir/classes/cuda-test:$cp" --scan-class-path "$dir/classes/cuda-test" \
    --include-tag gpu --details="${JUNIT_DETAILS:-tree}" --disable-banner --reports-dir "$reports" "$@"
  ;;
*)
  echo "unknown mode $mode (pack, test, tp, bench, collectives or cli)" >&2
  exit 2
  ;;
esac
