#!/usr/bin/env bash
# Device call 1 (seventeenth session): .carry-l2/head.tar.xz = 558391e's binaries. OCTO_L2_PREFETCH 0 / 16 / 48
# (MiB: the next wavefront's decode GEMV rows loaded into L2 beside the wavefront before, when they fit)
# alternating, twice, on 0.5B Q8_0, 1.5B Q4_K_M, 7B Q4_K_M and 7B Q8_0; the GPU tests on the card. No peer:
# this checkout's machine could not bring llama.cpp 3f545bec here (A/B only, same binaries).
# Run: bash benchmarks/results/2026-11-29-h200-l2/call1.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 $B/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_fused_decode >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests: $(grep -E 'test cases|rc=' $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A8 "ERROR" $OUT/tests.txt | head -60 > $OUT/test-errors.txt; rm -f $OUT/tests.txt
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 7b-q4_k_m 7b-q8_0 1.5b-q4_k_m 0.5b-q8_0; do ready $m
  for r in 1 2; do run l2-0 $m OCTO_L2_PREFETCH=0; run l2-16 $m OCTO_L2_PREFETCH=16; run l2-48 $m OCTO_L2_PREFETCH=48; done
  say "decode $m: $(grep "\"$m\|qwen2.5-$m" $OUT/decode.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["v"], round(d["decode_tok_s"],1), end="; ")')"
done
say done
