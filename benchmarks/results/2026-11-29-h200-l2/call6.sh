#!/usr/bin/env bash
# Device call 6: the closing numbers of call4's rule binary (= main after this session's GEMV rule) on
# five models, once each (the models of calls 4-5 reused where the machine still held them).
# Run: bash benchmarks/results/2026-11-29-h200-l2/call6.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/next /tmp/rule; tar -xJf $C/next.tar.xz -C /tmp/next; tar -xJf $C/rule.tar.xz -C /tmp/rule
B=/tmp/next/bin; R=/tmp/rule/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0 7b-q4_k_m; do ready $m
  timeout 120 $R/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt >> $OUT/decode.jsonl
  say "$m: $(tail -1 $OUT/decode.jsonl | python3 -c 'import sys,json; d=json.loads(sys.stdin.read()); print(round(d["prefill_tok_s"]), round(d["decode_tok_s"],1), round(d["fraction_of_bound"],3))')"
done
say done
