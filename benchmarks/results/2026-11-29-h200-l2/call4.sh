#!/usr/bin/env bash
# Device call 4: the wide integer GEMVs' 8 rows a workgroup only where that leaves at least 256
# workgroups (outputs >= 2048; .carry-l2/rule.tar.xz) against the old rule (next.tar.xz), alternating
# twice, on the three models it changes: 0.5B Q8_0 (down projection), 1.5B Q8_0 (down), 7B Q8_0 (K, V).
# Run: bash benchmarks/results/2026-11-29-h200-l2/call4.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/next /tmp/rule; tar -xJf $C/next.tar.xz -C /tmp/next; tar -xJf $C/rule.tar.xz -C /tmp/rule
B=/tmp/next/bin; R=/tmp/rule/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label bin model
  timeout 120 $2/bench_decode --model $S/qwen2.5-$3.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$1\",/" >> $OUT/decode.jsonl
}
show() { grep "qwen2.5-$1" $OUT/decode.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["v"], round(d["decode_tok_s"],1), end="; ")'; }
for m in 0.5b-q8_0 1.5b-q8_0 7b-q8_0; do ready $m
  for r in 1 2; do run old $B $m; run rule $R $m; done
  say "decode $m: $(show $m)"
done
say done
