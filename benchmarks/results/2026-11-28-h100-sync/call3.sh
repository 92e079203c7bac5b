#!/usr/bin/env bash
# Device call 3 (eighth session): why in-kernel waits lost to barriers in call2. The same binary under
# the waits' measurement knobs (docs/vulkan.md "In-kernel waits"): replicated done words, backoff between
# polls, no weight prefetch, a real barrier kept every n groups; barriers (OCTO_KERNEL_WAITS=0) first and last.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
for v in OCTO_KW_REPLICAS=1 OCTO_KW_BACKOFF=1 OCTO_KW_BARRIER_EVERY=2; do
  env $v timeout 120 $B/gpu_fused_decode -tc="in-kernel*" > $OUT/conformance-$v.txt 2>&1; say "gpu_fused_decode $v rc=$?"
done
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for v in OCTO_KERNEL_WAITS=0 OCTO_KERNEL_WAITS=1 OCTO_KW_REPLICAS=1 OCTO_KW_BACKOFF=1 OCTO_KW_BACKOFF=2 \
           "OCTO_KW_REPLICAS=1 OCTO_KW_BACKOFF=1" OCTO_KW_PREFETCH=0 OCTO_KW_BARRIER_EVERY=2 OCTO_KW_BARRIER_EVERY=5 \
           "OCTO_KW_REPLICAS=1 OCTO_KW_BARRIER_EVERY=5" OCTO_KERNEL_WAITS=0; do
    env $v timeout 120 $B/bench_decode $d --name "$m $v" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
wait
say done
