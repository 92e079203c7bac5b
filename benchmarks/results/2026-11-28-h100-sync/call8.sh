#!/usr/bin/env bash
# Device call 8 (eighth session; NOT RUN: the session's device time ran out, see README): a persistent
# decode kernel's bound, outside octo. call8/microbench/ is a
# standalone Vulkan program (built here: glslc --target-env=vulkan1.2 stage.comp -o stage.spv;
# g++ -O2 -std=c++20 chain.cpp -o chain -lvulkan -static-libstdc++ -static-libgcc; carried in
# .carry-gemm/chain/). A Qwen2.5-0.5B-shaped step of int8 GEMVs (24 layers of q|k|v, a small stage,
# o, gate|up, down; the LM head), one row per subgroup: one dispatch per stage behind pipeline barriers,
# the same without barriers (not a correct program), and one persistent dispatch of 132 or 264
# workgroups with a grid barrier between stages, with or without touching the next stage's rows first.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
C=.carry-gemm/chain
timeout 200 $C/chain $C 24 > $OUT/chain.jsonl 2>&1; echo "rc=$?" >> $OUT/chain.jsonl
cat $OUT/chain.jsonl
