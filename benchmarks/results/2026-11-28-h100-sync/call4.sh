#!/usr/bin/env bash
# Device call 4 (eighth session): the `_kw` kernels' own cost, apart from the waits: OCTO_KW_BARRIER_EVERY=1
# keeps every barrier (no kernel ever waits) but runs the _kw modules (prefetch, signal atomics, fences).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for v in OCTO_KERNEL_WAITS=0 OCTO_KW_BARRIER_EVERY=1 "OCTO_KW_BARRIER_EVERY=1 OCTO_KW_PREFETCH=0" \
           "OCTO_KW_BARRIER_EVERY=1 OCTO_KW_REPLICAS=1" OCTO_KERNEL_WAITS=0; do
    env $v timeout 120 $B/bench_decode $d --name "$m $v" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
wait
say done
