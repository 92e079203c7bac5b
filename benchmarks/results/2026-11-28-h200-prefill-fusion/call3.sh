#!/usr/bin/env bash
# Device call 3: call2 found every plain GEMM 10-45% slower than 41d0f2d's (the norm's two shared
# arrays took the coop tiles over a workgroup-per-multiprocessor threshold). This build (`new`: the norm's
# sums in the x tiles after the K loop, the norm weight fetched beside x) against 41d0f2d (`old41`):
# bench_gemm, gpu_conformance_fused "over many rows" on the card, bench_decode pp512 + 128 plain / fused
# on 1.5B Q4_K_M and 7B F16, the streamed 7B F16 at 2048 tokens under 4 GiB, the peer.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && tar -xJf old.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; O=$PWD/.carry-gemm/old; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 100 $B/gpu_conformance_fused -tc="*over many rows*" > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 100 $B/gpu_prefill_head >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 2 passed"
for r in 1 2; do
  for v in new old41; do
    d=$B; [ $v = new ] || d=$O/$v
    timeout 60 $d/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q4_k --kernels auto --passes 10 | sed "s/^{/{\"build\":\"$v\",/" >> $OUT/gemm.jsonl 2>>$OUT/log.txt
  done
done
say gemm
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # build model
  local d=$B fu=0; case $1 in new) ;; new-fused) fu=1 ;; *) d=$O/$1 ;; esac
  OCTO_PREFILL_FUSION=$fu timeout 90 $d/bench_decode --model $S/qwen2.5-$2.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 | sed "s/^{/{\"build\":\"$1\",\"model\":\"$2\",/" >> $OUT/decode.jsonl 2>>$OUT/log.txt
}
ready 1.5b-q4_k_m
for r in 1 2; do for v in new new-fused old41; do run $v 1.5b-q4_k_m; done; done
say "1.5b"
ready 7b-f16
for v in new new-fused old41 new new-fused; do run $v 7b-f16; done
say "7b"
for fu in 0 1; do
  OCTO_PREFILL_FUSION=$fu timeout 100 $B/bench_stream --model $S/qwen2.5-7b-f16.gguf --vram-budget 4GiB --prompt-tokens 2048 --decode-tokens 2 --name "4GiB 2048 fusion $fu" >> $OUT/stream.jsonl 2>>$OUT/log.txt
  say "stream fusion $fu"
done
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 1.5b-q4_k_m 7b-f16; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  [ $(( $(date +%s) - T0 )) -lt 540 ] || { say "no time for peer $m"; continue; }
  timeout 40 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
