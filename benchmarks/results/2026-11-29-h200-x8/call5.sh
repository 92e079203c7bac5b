#!/usr/bin/env bash
# Device call 5 (for the next session; not run: this session's device time was spent): .carry-x8/next.tar.xz
# = 5ba6834. OCTO_L2_PREFETCH 0 / 16 / 48 (MiB: the next wavefront's decode GEMV rows loaded into L2
# beside the wavefront before when they fit) alternating, twice, on 0.5B Q8_0, 1.5B Q4_K_M, 7B Q4_K_M and
# 7B Q8_0, with the peer on each; the GPU tests on the card (the L2 case among gpu_fused_decode's).
# Run: bash benchmarks/results/2026-11-29-h200-x8/call5.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-x8
mkdir -p /tmp/next /tmp/peer-bin
tar -xJf $C/next.tar.xz -C /tmp/next; tar -xJf $C/peer.tar.xz -C /tmp/peer-bin
B=/tmp/next/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 $B/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_fused_decode >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests: $(grep -E 'test cases|rc=' $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A8 "ERROR" $OUT/tests.txt | head -60 > $OUT/test-errors.txt; rm -f $OUT/tests.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 60 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do ready $m
  for r in 1 2; do run l2-0 $m OCTO_L2_PREFETCH=0; run l2-16 $m OCTO_L2_PREFETCH=16; run l2-48 $m OCTO_L2_PREFETCH=48; done
  peer $m; say "decode $m"; done
say done
