#!/usr/bin/env bash
# Device call 3: .carry-l2/next.tar.xz = the L2 prefetch removed + OCTO_GEMV_NR_NARROW (the narrow
# outputs' rows per workgroup: Q, K, V, O everywhere, the K-quants' down projections short of 16384).
# The GPU tests on the card; then NR_NARROW 2 (the default) / 4 / 8 alternating twice on 0.5B Q8_0,
# 1.5B Q8_0, 1.5B Q4_K_M and 7B Q4_K_M, and on 0.5B OCTO_GEMV_NR_WIDE=4 (its down projection, 8 rows now).
# Run: bash benchmarks/results/2026-11-29-h200-l2/call3.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/next; tar -xJf $C/next.tar.xz -C /tmp/next
B=/tmp/next/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 $B/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_fused_decode >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests: $(grep -E 'test cases|rc=' $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A8 "ERROR" $OUT/tests.txt | head -60 > $OUT/test-errors.txt; rm -f $OUT/tests.txt
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
show() { grep "qwen2.5-$1" $OUT/decode.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["v"], round(d["decode_tok_s"],1), end="; ")'; }
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do ready $m
  for r in 1 2; do run narrow-2 $m; run narrow-4 $m OCTO_GEMV_NR_NARROW=4; run narrow-8 $m OCTO_GEMV_NR_NARROW=8
    [ $m = 0.5b-q8_0 ] && { run wide-4 $m OCTO_GEMV_NR_WIDE=4; run narrow-4-wide-4 $m OCTO_GEMV_NR_NARROW=4 OCTO_GEMV_NR_WIDE=4; }; done
  say "decode $m: $(show $m)"
done
say done
