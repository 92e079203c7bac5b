#!/usr/bin/env bash
# Device call 4: call3's qwen_generate prefill on 7B Q4_K_M ran at 2.0-2.2k tok/s against bench_decode's
# 7.9k. This build fills a weight's f16 copy when the copy is made (the runtime adds its prefill program
# after the weights are written, so the first pass no longer fills them) and bench_decode reports its
# warm-up run's prefill (first_prefill_ms: what a single prompt takes). qwen_generate --verbose with and
# without the copies, bench_decode at 512 and 550 tokens; the copy tests on the card.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_gemm_tiles > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 120 $B/gpu_prefill_head >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 2 passed"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model tokens env...
  local l=$1 m=$2 p=$3; shift 3
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens $p --decode-tokens 32 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly behind the hills.']*25))")
user() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 100 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "$P" -n 32 --json --verbose 2>>$OUT/verbose.txt | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read())['summary']; d.pop('layers',None); d['v']='$l'; d['model']='$m'; print(json.dumps(d))" >> $OUT/user.jsonl
}
ready 0.5b-q8_0
run default 0.5b-q8_0 512 X=1; user default 0.5b-q8_0 X=1
ready 7b-q4_k_m
m=7b-q4_k_m
user default $m X=1; user copies0 $m OCTO_WEIGHT_COPIES=0; user default $m X=1
run default $m 512 X=1; run copies0 $m 512 OCTO_WEIGHT_COPIES=0; run default $m 550 X=1
say done
