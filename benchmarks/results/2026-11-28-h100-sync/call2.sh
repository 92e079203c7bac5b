#!/usr/bin/env bash
# Device call 2 (eighth session): in-kernel waits (vulkan_options::kernel_waits, the default of this
# build) against the barriers (OCTO_KERNEL_WAITS=0), the same binary, alternating on the same files;
# gpu_fused_decode (waits against barriers bit for bit, on the card) first.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_fused_decode > $OUT/conformance.txt 2>&1; say "gpu_fused_decode rc=$?"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for r in 1 2; do
    timeout 120 $B/bench_decode $d --name "$m waits" >> $OUT/decode.jsonl 2>>$OUT/log.txt
    OCTO_KERNEL_WAITS=0 timeout 120 $B/bench_decode $d --name "$m barriers" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
wait
say done
