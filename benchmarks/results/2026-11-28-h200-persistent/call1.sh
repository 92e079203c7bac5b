#!/usr/bin/env bash
# Device call 1 (ninth session, H200): the eighth session's call8 microbenchmark, run at last
# (benchmarks/results/2026-11-28-h100-sync/call8/microbench, plus 528 workgroups). Built here:
# glslc --target-env=vulkan1.2 stage.comp -o stage.spv; g++ -O2 -std=c++20 chain.cpp -o chain -lvulkan
# -static-libstdc++ -static-libgcc; carried in .carry-gemm/chain/.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > $OUT/env.txt 2>&1
C=.carry-gemm/chain
timeout 200 $C/chain $C 24 > $OUT/chain.jsonl 2>&1; echo "rc=$?" >> $OUT/chain.jsonl
cat $OUT/env.txt $OUT/chain.jsonl
