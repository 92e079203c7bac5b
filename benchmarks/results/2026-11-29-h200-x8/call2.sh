#!/usr/bin/env bash
# Device call 2 (sixteenth session): .carry-x8/base.tar.xz = 186fcc7; new.tar.xz = the same with the X8
# run's step and sum of quants read in one 8-byte load, and OCTO_ATTENTION_KEYS (keys a flash-decoding
# chunk: 32 / 64 / 128). The GEMV tests on the card with `new`; decode base / new on the models whose
# GEMVs take x rounded ahead; chunks of 32 and 128 keys against 64 on 0.5B Q8_0 and 7B Q4_K_M.
# Run: bash benchmarks/results/2026-11-29-h200-x8/call2.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-x8
mkdir -p /tmp/base /tmp/new
tar -xJf $C/base.tar.xz -C /tmp/base; tar -xJf $C/new.tar.xz -C /tmp/new
T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin /tmp/base/bin --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin /tmp/base/bin --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin /tmp/base/bin --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 /tmp/new/bin/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests (new): $(grep -E 'test cases|rc=' $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A8 "ERROR" $OUT/tests.txt | head -60 > $OUT/test-errors.txt; rm -f $OUT/tests.txt
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label binaries model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 120 /tmp/$b/bin/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
ready 0.5b-q8_0
for r in 1 2; do run keys64 new 0.5b-q8_0 X=1; run keys32 new 0.5b-q8_0 OCTO_ATTENTION_KEYS=32; run keys128 new 0.5b-q8_0 OCTO_ATTENTION_KEYS=128; done
say "decode 0.5b-q8_0"
ready 1.5b-q4_k_m
for r in 1 2; do run base base 1.5b-q4_k_m X=1; run new new 1.5b-q4_k_m X=1; done
say "decode 1.5b-q4_k_m"
ready 7b-q4_k_m
for r in 1 2; do run base base 7b-q4_k_m X=1; run new new 7b-q4_k_m X=1; run keys32 new 7b-q4_k_m OCTO_ATTENTION_KEYS=32; done
say "decode 7b-q4_k_m"
ready 7b-q8_0
for r in 1 2; do run base base 7b-q8_0 X=1; run new new 7b-q8_0 X=1; done
say "decode 7b-q8_0"
say done
