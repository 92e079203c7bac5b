#!/usr/bin/env bash
# Device call 6 (call5's binaries, main at 29f458a): where the 0.5B and 1.5B Q8_0 decode steps go now
# (bench_decode --profile, tasks serialized: each kernel's own time, ~2.7 us of profiling each).
# Run: bash benchmarks/results/2026-11-29-h200-head/call6.sh
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-head
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
for m in 0.5b-q8_0 1.5b-q8_0; do
  timeout 90 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 64 --profile > $OUT/profile-$m.txt 2>&1
  grep -A12 "where a decode step goes" $OUT/profile-$m.txt
done
