#!/usr/bin/env bash
# Device call 1 (seventh session): the integer-dot decode GEMVs (gemv_idot_*, the `fast` default where
# the device accelerates packed int8 dot products). On the card: the device facts, the integer-dot
# conformance cases and the GEMV decode shapes; bench_gemv_bandwidth and bench_decode with the new
# default and with OCTO_GEMV_IDOT=0 (the float loops of the same build) alternating; llama.cpp
# (llama-bench -fa 1) on the same files in the same call.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( PEER_OUT=/tmp/peer-pack bash tools/build_peer.sh --from-pack .carry-gemm/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt
  mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin ) &
$B/octo_devices --boot > $OUT/devices.txt 2>&1
$B/gpu_conformance_gemv -tc="*integer-dot*,*decode shapes*" > $OUT/conformance.txt 2>&1; say "conformance rc=$?"
$B/gpu_fused_decode -tc="*precision*" >> $OUT/conformance.txt 2>&1; say "fused precision rc=$?"
$B/gpu_conformance_fused >> $OUT/conformance.txt 2>&1; say "conformance_fused rc=$?"
G="--bandwidth-gbs 3071 --passes 10 --dtypes q8_0,q4_k,q6_k --sizes 896x896,4864x896,1536x1536,8960x1536,3584x3584,37888x3584,3584x18944,152064x3584"
$B/bench_gemv_bandwidth $G > $OUT/gemv-idot.jsonl 2>>$OUT/log.txt
OCTO_GEMV_IDOT=0 $B/bench_gemv_bandwidth $G > $OUT/gemv-float.jsonl 2>>$OUT/log.txt
say "gemv bandwidth"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 7b-q4_k_m 7b-q8_0 1.5b-q4_k_m 1.5b-q8_0 0.5b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128"
  $B/bench_decode $d --repeat 2 --name "$m idot" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  OCTO_GEMV_IDOT=0 $B/bench_decode $d --repeat 2 --name "$m float" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  say "$m"
done
for m in 7b-q4_k_m 1.5b-q8_0; do
  $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile --name "$m idot" >> $OUT/profile.txt 2>&1
  OCTO_GEMV_IDOT=0 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile --name "$m float" >> $OUT/profile.txt 2>&1
done
say profile
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
say "peer: $LB"
for m in 7b-q4_k_m 7b-q8_0 1.5b-q4_k_m 1.5b-q8_0 0.5b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
