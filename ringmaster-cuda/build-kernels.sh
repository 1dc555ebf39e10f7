#!/usr/bin/env bash
# Builds the CUDA kernels into one fatbin: SASS for sm_90 (H100/H200) and sm_120 (RTX PRO 6000
# Blackwell) plus compute_90 PTX that newer GPUs compile at load time.
#
#   build-kernels.sh SRC_DIR OUT_DIR
#
# Writes OUT_DIR/ringmaster_kernels.fatbin and OUT_DIR/kernels.properties. Without nvcc it writes only
# the properties file (nvcc=absent), so the build stays CPU-only and loading the kernels later says
# what to install. Skips nvcc when the fatbin is newer than every source. GPU_TARGETS (e.g. sm_90)
# builds SASS for those targets only, without PTX: smaller, for packs that travel to one known GPU.
set -euo pipefail
src=$1
out=$2
mkdir -p "$out"
fatbin=$out/ringmaster_kernels.fatbin
props=$out/kernels.properties

nvcc=""
for candidate in "${NVCC:-}" "$(command -v nvcc || true)" "${CUDA_HOME:-/nonexistent}/bin/nvcc" \
  "${CUDA_PATH:-/nonexistent}/bin/nvcc" /usr/local/cuda/bin/nvcc; do
  if [[ -n $candidate && -x $candidate ]]; then nvcc=$candidate; break; fi
done
if [[ -z $nvcc ]]; then
  echo "ringmaster-cuda: nvcc not found; building without GPU kernels (install the CUDA toolkit 13 to build them)"
  rm -f "$fatbin"
  printf 'nvcc=absent\n' > "$props"
  exit 0
fi

if [[ -s $fatbin && -s $props ]] && [[ -z $(find "$src" -newer "$fatbin" -type f) ]]; then
  exit 0
fi
version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
echo "ringmaster-cuda: compiling kernels with nvcc $version"
targets=${GPU_TARGETS:-sm_90,sm_120,compute_90}
if [[ -n ${GPU_TARGETS:-} ]]; then
  gencode=()
  for t in ${GPU_TARGETS//,/ }; do gencode+=(-gencode "arch=compute_${t#sm_},code=$t"); done
else
  gencode=(-lineinfo -gencode arch=compute_90,code=sm_90 -gencode arch=compute_120,code=sm_120
    -gencode arch=compute_90,code=compute_90)
fi
"$nvcc" -fatbin -O3 -std=c++17 "${gencode[@]}" -I "$src" -o "$fatbin.tmp" "$src/ringmaster_kernels.cu"
mv "$fatbin.tmp" "$fatbin"
printf 'nvcc=%s\ntargets=%s\n' "$version" "$targets" > "$props"
