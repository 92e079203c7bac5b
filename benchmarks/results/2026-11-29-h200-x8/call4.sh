#!/usr/bin/env bash
# Device call 4 (sixteenth session, the last 260 s): new3.tar.xz = bench_decode of call2's `new` with
# gemv_quantize_x in one pass (each run's x loaded once, the sum of squares taken on the way, one
# subgroup reduction). Decode new / new3 alternating on 1.5B Q4_K_M.
# Run: bash benchmarks/results/2026-11-29-h200-x8/call4.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-x8
mkdir -p /tmp/new /tmp/new3
tar -xJf $C/new.tar.xz -C /tmp/new; tar -xJf $C/new3.tar.xz -C /tmp/new3
T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin /tmp/new/bin --keep --no-bench > $OUT/models-log.txt 2>&1
say models
for r in 1 2 3; do for b in new new3; do
  timeout 60 /tmp/$b/bin/bench_decode --model $S/qwen2.5-1.5b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$b\",/" >> $OUT/decode.jsonl
done; done
say done
