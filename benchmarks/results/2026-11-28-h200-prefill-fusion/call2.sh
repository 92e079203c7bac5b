#!/usr/bin/env bash
# Device call 2: call1 found the plain 1.5B Q4_K_M pp512 20% under the tenth session's call6 (16.7k
# against 20.9k) and the fused prefill 6-9% slower than the plain one. A/B in one call: this build
# (`new`: main + the norm weight fetched beside x in gemm_coop / gemm_reg), 41d0f2d (`old41`, call6's
# code) and 0a4358b (`old0a`, + the layer observer over many workgroups): bench_gemm on the 1.5B / 7B
# shapes, bench_decode pp512 + 128 on 1.5B Q4_K_M alternating, per-opcode profiles; then the 7B F16
# (plain / fused, the streamed prefill at 2048 tokens under 4 GiB, the chain with every layer resident)
# and the peer.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && tar -xJf old.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; O=$PWD/.carry-gemm/old; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
for r in 1 2; do
  for v in new old41 old0a; do
    d=$B; [ $v = new ] || d=$O/$v
    timeout 60 $d/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q4_k --kernels auto --passes 10 | sed "s/^{/{\"build\":\"$v\",/" >> $OUT/gemm.jsonl 2>>$OUT/log.txt
  done
done
say gemm
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
ready 1.5b-q4_k_m; f=$S/qwen2.5-1.5b-q4_k_m.gguf
for r in 1 2; do
  for v in new new-fused old41 old0a; do
    d=$B; fu=0; case $v in new) ;; new-fused) fu=1 ;; *) d=$O/$v ;; esac
    OCTO_PREFILL_FUSION=$fu timeout 60 $d/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 | sed "s/^{/{\"build\":\"$v\",\"model\":\"1.5b-q4_k_m\",/" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
done
say "1.5b decode"
for v in new new-fused old41; do
  d=$B; fu=0; case $v in new) ;; new-fused) fu=1 ;; *) d=$O/$v ;; esac
  echo "== $v" >> $OUT/profile.txt
  OCTO_PREFILL_FUSION=$fu timeout 60 $d/bench_decode --model $f --prompt-tokens 512 --decode-tokens 4 --profile >> $OUT/profile.txt 2>>$OUT/log.txt
done
say "1.5b profile"
ready 7b-f16; f=$S/qwen2.5-7b-f16.gguf
for v in new new-fused new old41; do
  d=$B; fu=0; case $v in new) ;; new-fused) fu=1 ;; *) d=$O/$v ;; esac
  OCTO_PREFILL_FUSION=$fu timeout 90 $d/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 | sed "s/^{/{\"build\":\"$v\",\"model\":\"7b-f16\",/" >> $OUT/decode.jsonl 2>>$OUT/log.txt
done
say "7b decode"
for fu in 0 1; do
  OCTO_PREFILL_FUSION=$fu timeout 150 $B/bench_stream --model $f --vram-budget 4GiB --prompt-tokens 2048 --decode-tokens 2 --name "4GiB 2048 fusion $fu" >> $OUT/stream.jsonl 2>>$OUT/log.txt
  say "stream fusion $fu"
done
timeout 100 $B/bench_stream --model $f --vram-budget 60GiB --resident-layers 28 --prompt-tokens 2048 --decode-tokens 2 --name "chain all resident 2048" >> $OUT/stream.jsonl 2>>$OUT/log.txt
say "chain resident"
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 1.5b-q4_k_m 7b-f16; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  [ $(( $(date +%s) - T0 )) -lt 540 ] || { say "no time for peer $m"; continue; }
  timeout 40 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
