#!/usr/bin/env bash
# Device call 2: x through shared memory removed, the chunk loops back in one function each (the
# fifteenth session's revert): the contract tests on the card, bench_gemv_bandwidth on 7B shapes and the
# new formats' integer loops against their float loops, bench_decode on 0.5B Q8_0, 1.5B Q4_K_M, 7B Q4_K_M
# and 7B Q8_0 with the peer on each, a 7B Q4_K_M decode profile.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_fused_decode > $OUT/tests-fused.txt 2>&1; echo "rc=$?" >> $OUT/tests-fused.txt
say "tests: $(grep -h 'test cases' $OUT/tests.txt $OUT/tests-fused.txt | tr '\n' ' ')"
timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584,152064x3584,4864x896 --dtypes q4_k,q6_k,q8_0 --passes 20 --bandwidth-gbs 4800 > $OUT/gemv.jsonl 2>>$OUT/log.txt
for i in 0 1; do
  OCTO_GEMV_IDOT=$i timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584 --dtypes q4_1,q5_0,q5_1,q2_k,q3_k --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"idot\":$i,/" >> $OUT/gemv-new.jsonl 2>>$OUT/log.txt
done
say gemv
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 60 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do ready $m
  run default $m X=1; peer $m; run default $m X=1; say "decode $m"; done
timeout 120 $B/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile.txt 2>&1
say done
