#!/usr/bin/env bash
# Device call 6: weights dequantized wavefronts ahead (OCTO_BEFORE_LEAD, default 3): each prefill
# GEMM's weights_f16 launch recorded beside the kernels of the wavefront `lead` before its own, so the
# memory-bound dequantization overlaps an earlier GEMM. gpu_gemm_tiles on the card; bench_decode pp512 +
# 128 tokens on 1.5B Q4_K_M, 7B Q4_K_M and 7B Q8_0 at leads 0 (the old order), 2, 3, 4, alternating;
# llama.cpp 3f545bec on the same files.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 $B/gpu_gemm_tiles > $OUT/gemm_tiles.txt 2>&1; echo "rc=$?" >> $OUT/gemm_tiles.txt
say "tiles $(tail -3 $OUT/gemm_tiles.txt | tr '\n' ' ')"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  for r in 1 2; do
    for lead in 0 2 3 4; do
      OCTO_BEFORE_LEAD=$lead timeout 120 $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 --name "$m lead $lead" >> $OUT/decode.jsonl 2>>$OUT/log.txt
    done
  done
  say "$m"
done
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  timeout 120 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
