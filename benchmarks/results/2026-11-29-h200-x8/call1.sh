#!/usr/bin/env bash
# Device call 1 (sixteenth session): .carry-x8/base.tar.xz = 186fcc7 (x rounded ahead by default over rows
# of >= 1536), probe.tar.xz = the same with the Q4_K integer loop taking a whole 64-element group per
# invocation (one header load and scale decode per 64 elements instead of 32). The GPU tests on the card
# with the probe; decode base / probe alternating on 1.5B and 7B Q4_K_M; 1.5B Q8_0 at the default
# against OCTO_GEMV_X8=0 (the threshold's untested side); the peer on each model.
# Run: bash benchmarks/results/2026-11-29-h200-x8/call1.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-x8
mkdir -p /tmp/base /tmp/probe /tmp/peer-bin
tar -xJf $C/base.tar.xz -C /tmp/base; tar -xJf $C/probe.tar.xz -C /tmp/probe; tar -xJf $C/peer.tar.xz -C /tmp/peer-bin
T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m,q8_0 --scratch $S --bin /tmp/base/bin --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin /tmp/base/bin --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 /tmp/probe/bin/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 /tmp/probe/bin/gpu_fused_decode >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests (probe): $(grep -E 'test cases|rc=' $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A8 "ERROR" $OUT/tests.txt | head -60 > $OUT/test-errors.txt; rm -f $OUT/tests.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 60 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label binaries model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 120 /tmp/$b/bin/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
ready 1.5b-q8_0
for r in 1 2; do run default base 1.5b-q8_0 X=1; run x8-0 base 1.5b-q8_0 OCTO_GEMV_X8=0; done
peer 1.5b-q8_0; say "decode 1.5b-q8_0"
for m in 1.5b-q4_k_m 7b-q4_k_m; do ready $m
  for r in 1 2; do run base base $m X=1; run probe probe $m X=1; done
  peer $m; say "decode $m"; done
say done
