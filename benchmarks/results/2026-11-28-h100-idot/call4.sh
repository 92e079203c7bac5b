#!/usr/bin/env bash
# Device call 4 (seventh session): decode GEMV workgroups at least 64 wide (was 32 where a row has fewer
# than 64 chunks: the Q6_K LM head of Q4_K_M models, Q6_K rows of 1536, the 0.5B's Q8_0) against the
# tree before it (`old`: call1's binary with OCTO_GEMV_IDOT=0), alternating on the same files, on the
# models whose GEMVs it changes; per-role profiles of 7B Q4_K_M; llama.cpp (-fa 1) in the same call.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( PEER_OUT=/tmp/peer-pack bash tools/build_peer.sh --from-pack .carry-gemm/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt
  mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin ) &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 7b-q4_k_m 1.5b-q4_k_m 0.5b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for r in 1 2; do
    $B/bench_decode $d --name "$m new" >> $OUT/decode.jsonl 2>>$OUT/log.txt
    OCTO_GEMV_IDOT=0 $B/bench_decode_old $d --name "$m old" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
p="--model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile"
$B/bench_decode $p --name "7b-q4_k_m new" > $OUT/profile.txt 2>&1
OCTO_GEMV_IDOT=0 $B/bench_decode_old $p --name "7b-q4_k_m old" >> $OUT/profile.txt 2>&1
say profile
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 7b-q4_k_m 1.5b-q4_k_m 0.5b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
