#!/usr/bin/env bash
# Packs the command-line tool of one commit for an A/B benchmark on another machine.
#
#   scripts/bench-pack.sh COMMIT DIR     build COMMIT in a temporary worktree and put its CLI
#                                        (classes and runtime jars) in DIR/cli
#   scripts/gpu-tests.sh cli DIR ARGS    then run it there, e.g. `bench one-batch ... --json`,
#                                        alternating with a pack of the other commit
#
# Two packs travel together with a Java runtime and the repository, so each is kept small: where
# nvcc is installed (GPU_TARGET, default sm_90) the kernel fatbin in the pack is rebuilt from the
# commit's sources for that one target instead of the three the normal build embeds; the kernels'
# code for it is the same. Without nvcc the commit's own fatbin stays.
set -euo pipefail
commit=${1:?usage: bench-pack.sh COMMIT DIR}
dir=${2:?usage: bench-pack.sh COMMIT DIR}
target=${GPU_TARGET:-sm_90}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/env.sh"
tree=$(mktemp -d)
cleanup() { git -C "$root" worktree remove --force "$tree" >/dev/null 2>&1 || rm -rf "$tree"; }
trap cleanup EXIT
git -C "$root" worktree add -q --detach "$tree" "$commit"
(
  cd "$tree"
  mvn -B -q -ntp -pl ringmaster-cli -am package -DskipTests -Dspotless.check.skip=true
)
rm -rf "$dir"
mkdir -p "$dir/cli"
dir=$(cd "$dir" && pwd) # absolute: the fatbin update below runs from another folder
cp -r "$tree/ringmaster-cli/target/classes" "$dir/cli/classes"
cp -r "$tree/ringmaster-cli/target/lib" "$dir/cli/lib"
jar=$(ls "$dir"/cli/lib/ringmaster-cuda-*.jar 2>/dev/null | head -1 || true)
if [[ -n $jar ]] && command -v nvcc >/dev/null; then
  # This checkout's kernel build script on the commit's sources, for the one target.
  staged=$(mktemp -d)
  kernels=dev/ringmaster/cuda/kernels
  GPU_TARGETS=$target bash "$root/ringmaster-cuda/build-kernels.sh" \
    "$tree/ringmaster-cuda/src/main/cuda" "$staged/$kernels" >/dev/null
  (cd "$staged" && "$JAVA_HOME/bin/jar" uf "$jar" "$kernels/ringmaster_kernels.fatbin" \
    "$kernels/kernels.properties")
  rm -rf "$staged"
fi
echo "$(git -C "$root" rev-parse --short "$commit") -> $dir ($(du -sh "$dir" | cut -f1))"
