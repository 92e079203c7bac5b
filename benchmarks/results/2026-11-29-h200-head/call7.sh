#!/usr/bin/env bash
# Device call 7 (main plus the few-outputs rule: wide integer-dot GEMVs with fewer than 1024 outputs over
# rows of K >= 3072 take 2 rows, not 4): 0.5B Q8_0 decode, the rule against the old rows forced back
# (OCTO_GEMV_NR_WIDE=4 OCTO_GEMV_NR_SWIGLU=8 is exactly main's plan at 0.5B), alternating; 7B Q8_0 decode
# (main: 310.5 in call4), and its K / V GEMVs' own times (--profile) with the rule and at 4 rows.
# Run: bash benchmarks/results/2026-11-29-h200-head/call7.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-few
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*')"
}
ready 0.5b-q8_0
for r in 1 2 3; do run few 0.5b-q8_0; run old 0.5b-q8_0 OCTO_GEMV_NR_WIDE=4 OCTO_GEMV_NR_SWIGLU=8; done
ready 7b-q8_0
run few 7b-q8_0
for e in "" "OCTO_GEMV_NR_WIDE=4 OCTO_GEMV_NR_SWIGLU=4"; do
  env $e timeout 90 $B/bench_decode --model $S/qwen2.5-7b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/p.txt 2>&1
  say "7b profile [$e]: $(grep -E 'profile_role' $OUT/p.txt | grep '"decode"' | grep -E 'k_cache|v_cache|q_rope' | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["role"], round(d["us"]/d["count"],1), end="; ")')"
done
run few 7b-q8_0
say done
