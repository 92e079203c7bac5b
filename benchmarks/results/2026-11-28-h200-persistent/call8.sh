#!/usr/bin/env bash
# Device call 8 (ninth session, H200): call6 again after the dequantizations of a wavefront were recorded together (one barrier pair a wavefront instead of one a task), on five models; the weights dequantized once to f16
# (weights_f16 + gemm_coopf_f16) against the tree before the session: gpu_gemm_tiles on the card,
# bench_decode old/new alternating (bench_decode_base = 7a32083), llama.cpp
# 3f545bec on the same files.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 $B/gpu_gemm_tiles > $OUT/gemm_tiles.txt 2>&1; echo "rc=$?" >> $OUT/gemm_tiles.txt; tail -3 $OUT/gemm_tiles.txt
say tiles
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q4_k_m 1.5b-q8_0 7b-q4_k_m 7b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for r in 1 2; do
    timeout 120 $B/bench_decode_base $d --name "$m base" >> $OUT/decode.jsonl 2>>$OUT/log.txt
    timeout 120 $B/bench_decode $d --name "$m new" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 0.5b-q8_0 1.5b-q4_k_m 1.5b-q8_0 7b-q4_k_m 7b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  timeout 120 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
