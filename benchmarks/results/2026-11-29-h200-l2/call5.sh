#!/usr/bin/env bash
# Device call 5: the narrow outputs at 1 row a workgroup (OCTO_GEMV_NR_NARROW=1: twice the workgroups
# for the small K / V projections) against the default 2, alternating twice, with call4's rule binary,
# on 0.5B Q8_0, 1.5B Q8_0 and 1.5B Q4_K_M.
# Run: bash benchmarks/results/2026-11-29-h200-l2/call5.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/next /tmp/rule; tar -xJf $C/next.tar.xz -C /tmp/next; tar -xJf $C/rule.tar.xz -C /tmp/rule
B=/tmp/next/bin; R=/tmp/rule/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $R/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
show() { grep "qwen2.5-$1" $OUT/decode.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["v"], round(d["decode_tok_s"],1), end="; ")'; }
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m; do ready $m
  for r in 1 2; do run narrow-2 $m; run narrow-1 $m OCTO_GEMV_NR_NARROW=1; done
  say "decode $m: $(show $m)"
done
say done
