#!/usr/bin/env bash
# Device call 1: the integer-dot decode GEMVs with x rounded once per workgroup into shared memory
# (OCTO_GEMV_XQ=1, coalesced) against each invocation rounding its own runs (OCTO_GEMV_XQ=0): the
# contract tests, bench_gemv_bandwidth on 7B shapes, bench_decode on 0.5B Q8_0, 1.5B Q4_K_M, 7B Q4_K_M
# and 7B Q8_0 alternating the two, the peer on each; the new integer loops (Q4_1, Q5_0, Q5_1, Q2_K,
# Q3_K) against their float loops on bench_gemv_bandwidth.
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
timeout 120 $B/gpu_fused_decode -s >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 2 passed"
for r in 1 2; do for xq in 0 1; do
  OCTO_GEMV_XQ=$xq timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584,152064x3584,4864x896 --dtypes q4_k,q6_k,q8_0 --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"xq\":$xq,\"round\":$r,/" >> $OUT/gemv.jsonl 2>>$OUT/log.txt
done; done
# The integer loops added this session (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K) against their float loops.
for r in 1 2; do for i in 0 1; do
  OCTO_GEMV_IDOT=$i timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584 --dtypes q4_1,q5_0,q5_1,q2_k,q3_k --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"idot\":$i,\"round\":$r,/" >> $OUT/gemv-new.jsonl 2>>$OUT/log.txt
done; done
say gemv
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 60 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do ready $m
  for r in 1 2; do run xq0 $m OCTO_GEMV_XQ=0; run xq1 $m OCTO_GEMV_XQ=1; done
  run xq1-wide8 $m OCTO_GEMV_XQ=1 OCTO_GEMV_NR_WIDE=8
  peer $m; say "decode $m"; done
OCTO_GEMV_XQ=1 timeout 120 $B/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile.txt 2>&1
say done
