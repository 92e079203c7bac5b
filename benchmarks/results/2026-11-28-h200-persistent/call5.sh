#!/usr/bin/env bash
# Device call 5 (ninth session, H200): the NV cooperative-matrix multiply rate apart from any kernel
# (call5/microbench: mma.comp, mma.cpp; built here with glslc --target-env=vulkan1.2 and g++ -O2
# -std=c++20 -lvulkan -static-libstdc++ -static-libgcc, carried in .carry-gemm/), then bench_gemm's
# per-shape rate of the planner's GEMM at 512 rows (1.5B and 7B shapes, F16 / Q8_0 / Q4_K / Q6_K).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin
timeout 120 .carry-gemm/mma .carry-gemm > $OUT/mma.jsonl 2>&1; echo "rc=$?" >> $OUT/mma.jsonl
timeout 300 $B/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q8_0,q4_k,q6_k --passes 10 > $OUT/gemm.jsonl 2>$OUT/log.txt
cat $OUT/mma.jsonl
