#!/usr/bin/env bash
# Device call 4: the committed rule alone (call3's flash-decoding merge prefetch and GEMV epilogue
# loads reverted: attention up to 2x slower on the 7B shape, the epilogue change neutral), with its
# K <= 2048 condition for the 32-element formats, beside llama.cpp (llama-bench -fa 1: the better
# setting in every row of call3) in the same call, and the previous build (ae6ffb7, `old`) on the one
# model the K condition changes (7B Q8_0; the others' old numbers are call3's).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( PEER_OUT=/tmp/peer-pack bash tools/build_peer.sh --from-pack .carry-gemm/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt
  mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin ) &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 7b-q8_0 7b-q4_k_m 1.5b-q4_k_m 1.5b-q8_0 0.5b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128"
  $B/bench_decode $d --repeat 2 --name "$m new" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  [ $m = 7b-q8_0 ] && $B/bench_decode_old $d --repeat 2 --name "$m old" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  say "$m"
done
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
say "peer: $LB"
for m in 7b-q8_0 7b-q4_k_m 1.5b-q4_k_m 1.5b-q8_0 0.5b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
