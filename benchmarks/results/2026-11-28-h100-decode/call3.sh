#!/usr/bin/env bash
# Device call 3: this session's tree (GEMV rows per workgroup by output width, the GEMV epilogue's loads
# issued first, the flash-decoding merge's partials prefetched) beside llama.cpp's Vulkan backend in the
# same call on the same files, and beside the previous build (ae6ffb7, `old`); the new build with
# OCTO_GEMV_NR=4 (the old rows-per-workgroup rule) isolates the rule. Conformance of the changed
# kernels on the card first.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( PEER_OUT=/tmp/peer-pack bash tools/build_peer.sh --from-pack .carry-gemm/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
say conformance
{ timeout 150 $B/gpu_conformance -tc="*decode steps of one recording*,*flash decode attention sized*" ; echo "rc=$?"
  timeout 150 $B/gpu_conformance_fused; echo "rc=$?"
  timeout 120 $B/gpu_conformance_gemv -tc="*decode shapes*"; echo "rc=$?"; } > $OUT/conformance.txt 2>&1
say attention
for b in bench_attention bench_attention_old; do
  $B/$b --shapes 14x2x64,12x2x128,28x4x128 --ctx 512,1024,4096 --kv-types f16 --passes 20 2>>$OUT/log.txt | sed "s/^{/{\"build\":\"$b\",/" >> $OUT/attention.jsonl
done
wait
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
say "bench (peer: $LB)"
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0 7b-q4_k_m; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128"
  $B/bench_decode $d --repeat 2 --name "$m new" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  [ -n "$LB" ] && $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 0,1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  $B/bench_decode_old $d --repeat 2 --name "$m old" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  OCTO_GEMV_NR=4 $B/bench_decode $d --repeat 1 --name "$m new-nr4" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  say "$m"
done
say done
