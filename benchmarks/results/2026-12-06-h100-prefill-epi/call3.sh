#!/usr/bin/env bash
# Device call 3 (the binaries of call 1, 2eb651a's tree): the whole of gpu_conformance,
# gpu_conformance_fused, gpu_conformance_gemv and gpu_gemm_tiles on the card (every kernel the H100 runs,
# the tensor-core GEMMs with the f16 weight copies that the SWIGLU now asks two of), and tiny-qwen's 50
# reference sums through the engine (the default prefill: norms ahead, RMSNORM_SWIGLU) against PyTorch's.
# Run: bash benchmarks/results/2026-12-06-h100-prefill-epi/call3.sh   (carry .carry-s31, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
rm -rf /tmp/new3; mkdir -p /tmp/new3; tar -xJf .carry-s31/new3.tar.xz -C /tmp/new3
N=/tmp/new3/bin
mkdir -p /work && ln -sfn "$PWD" /work/wip   # the tests' OCTO_SOURCE_DIR (models/tiny-qwen)
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for t in gpu_conformance_fused gpu_conformance gpu_conformance_gemv gpu_gemm_tiles gpu_runtime_tiny_qwen; do
  timeout 170 $N/$t > $OUT/$t.txt 2>&1; say "$t exit $? $(grep -o 'test cases:.*' $OUT/$t.txt | tail -1)"
done
say done
