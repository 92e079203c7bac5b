#!/usr/bin/env bash
# Device call 4: the final tree beside llama.cpp's Vulkan backend in the same call, same files:
# octo bench_decode (512-token prompt in one pass, 128 decoded) alternating with llama-bench -p 512
# -n 128 -fa 0,1 (its better of the two), and the previous build (_old) for the gain.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
say peer build
PEER_OUT=/tmp/peer-pack bash tools/build_peer.sh --from-pack .carry-gemm/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || say "peer build failed"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
wait
say bench
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 --name "$m new" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  [ -n "$LB" ] && $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 0,1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  $B/bench_decode_old --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 --name "$m old" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  say "$m"
done
say done
