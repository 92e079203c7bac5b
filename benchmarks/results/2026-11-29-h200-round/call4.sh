#!/usr/bin/env bash
# Device call 4 (main at f9be60d + gemv_quantize_x in one round of loads and subgroup sums, uncommitted):
# each invocation loads its runs of x and the norm weight once, sums their squares and rounds from
# registers. Against base: f9be60d (call3's head), alternating; the integer-dot conformance cases
# on the card; the peer (llama.cpp
# 3f545bec) on the same files in the same call; 7B Q8_0 for issue 16's 320 tok/s.
# Run: bash benchmarks/results/2026-11-29-h200-round/call4.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p20
mkdir -p /tmp/head /tmp/base /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/base.tar.xz -C /tmp/base
tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin /tmp/head/bin --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin /tmp/head/bin --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 /tmp/head/bin/gpu_conformance_gemv -tc="*integer-dot*" > $OUT/conformance.txt 2>&1
say "gpu_conformance_gemv (integer-dot): exit $? $(grep 'assertions' $OUT/conformance.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model
  local l=$1 m=$2
  timeout 120 /tmp/$l/bin/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"dispatches":[0-9]*\|"barriers":[0-9]*' | tr '\n' ' ')"
}
peer() {
  timeout 120 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do ready $m
  reps="1 2"; [ $m = 7b-q8_0 ] && reps="1 2 3"
  for r in $reps; do
    run head $m
    run base $m
  done
  peer $m
done
say done
