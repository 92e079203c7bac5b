#!/usr/bin/env bash
# Device call 3 (sixteenth session): new2.tar.xz = bench_decode of call2's `new` with a chunk cap of
# 8192 / keys (256 chunks of 32 keys, 128 of 64). Flash-decoding chunks of 32 keys against 64 at
# positions 128 to 32000 (bench_decode --at-positions, 32 steps each) on 0.5B Q8_0 and 7B Q4_K_M,
# alternating, twice.
# Run: bash benchmarks/results/2026-11-29-h200-x8/call3.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-x8
mkdir -p /tmp/base /tmp/new2
tar -xJf $C/base.tar.xz -C /tmp/base; tar -xJf $C/new2.tar.xz -C /tmp/new2
T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin /tmp/base/bin --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin /tmp/base/bin --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 150 /tmp/new2/bin/bench_decode --model $S/qwen2.5-$m.gguf --ctx 32768 --at-positions 128,1024,4096,16384,32000 --decode-tokens 32 --repeat 1 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 7b-q4_k_m; do ready $m
  for r in 1 2; do run keys64 $m X=1; run keys32 $m OCTO_ATTENTION_KEYS=32; done
  say "positions $m"; done
say done
