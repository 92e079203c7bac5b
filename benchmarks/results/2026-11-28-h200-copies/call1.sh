#!/usr/bin/env bash
# Device call 1 (twelfth session): main's head (f9ec463) end to end: bench_decode pp512 + 128 with the
# residual-fused prefill default and with OCTO_PREFILL_FUSION=0 (plain), on 1.5B Q4_K_M, 7B Q4_K_M and
# 7B F16; a --profile of the two Q4_K_M models' decode step; the Q4_K GEMV shapes alone; the streamed 7B
# F16 at 2048 tokens under 4 GiB; llama.cpp 3f545bec on the same files.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,18944x3584,3584x3584,512x3584 --dtypes q4_k,q6_k,q8_0 --passes 30 > $OUT/gemv.jsonl 2>>$OUT/log.txt
say gemv
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 40 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # fusion model [extra]
  local m=$2 fu=$1; shift 2
  OCTO_PREFILL_FUSION=$fu timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 "$@" 2>>$OUT/profile.txt | sed "s/^{/{\"fusion\":\"$fu\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
ready 1.5b-q4_k_m
for r in 1 2; do run "" 1.5b-q4_k_m; run 0 1.5b-q4_k_m; done
run "" 1.5b-q4_k_m --profile
say 1.5b
peer 1.5b-q4_k_m
ready 7b-q4_k_m
run "" 7b-q4_k_m; run 0 7b-q4_k_m; run "" 7b-q4_k_m --profile
say 7b-q4
peer 7b-q4_k_m
run "" 7b-f16; run 0 7b-f16
say 7b-f16
peer 7b-f16
[ $(( $(date +%s) - T0 )) -lt 520 ] && timeout 100 $B/bench_stream --model $S/qwen2.5-7b-f16.gguf --vram-budget 4GiB --prompt-tokens 2048 --decode-tokens 2 --name "4GiB 2048" >> $OUT/stream.jsonl 2>>$OUT/log.txt
say stream
say done
