#!/usr/bin/env bash
# Device call 7 (eighth session): what one synchronization costs, outside octo. call7/microbench/ is a
# standalone Vulkan program (raw Vulkan-Hpp, built here with
#   glslc --target-env=vulkan1.2 gridbar.comp -o gridbar.spv; glslc --target-env=vulkan1.2 empty.comp -o empty.spv
#   g++ -O2 -std=c++20 gridbar.cpp -o gridbar -lvulkan -static-libstdc++ -static-libgcc
# and carried in .carry-gemm/gridbar/). Per workgroup count, 1000 rounds: a grid barrier inside one
# dispatch (every workgroup adds 1 to one counter and polls it), against 1000 tiny dependent dispatches
# separated by pipeline barriers, and 1000 without barriers.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
G=.carry-gemm/gridbar
timeout 120 $G/gridbar $G 1000 > $OUT/gridbar.jsonl 2>&1; echo "rc=$?" >> $OUT/gridbar.jsonl
timeout 60 $G/gridbar $G 1000 2112 >> $OUT/gridbar.jsonl 2>&1; echo "rc=$?" >> $OUT/gridbar.jsonl
cat $OUT/gridbar.jsonl
