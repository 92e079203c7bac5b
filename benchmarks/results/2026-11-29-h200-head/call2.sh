#!/usr/bin/env bash
# Device call 2 (the keep-awake build, c.f. call1): (a) gpu_device on the card, plain and under the
# Khronos validation layers with synchronization validation (the keep-awake thread and its queue);
# (b) qwen_generate's one prompt pass (550 tokens, 7B Q4_K_M) with the keep-awake default against
# OCTO_KEEP_AWAKE=0, alternating, the GPU idle before each, nvidia-smi sampling the clock; bench_decode at
# 550 prompt tokens for the steady state; (c) the LM head's x rounded ahead at 0.5B Q8_0 (the default
# now) against OCTO_GEMV_X8=0 (the old default there), alternating, and the peer on the same file.
# Run: bash benchmarks/results/2026-11-29-h200-head/call2.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb .carry-head/vl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-head
mkdir -p /tmp/head /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T.%N) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
timeout 120 $B/gpu_device > $OUT/tests.txt 2>&1; say "gpu_device: exit $? $(tail -2 $OUT/tests.txt | head -1)"
OCTO_VALIDATION=1 VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT timeout 120 $B/gpu_device -s > $OUT/tests-validation.txt 2>&1
say "gpu_device validation: exit $? $(grep -c 'Validation' $OUT/tests-validation.txt) layer lines; $(tail -2 $OUT/tests-validation.txt | head -1)"
ready 0.5b-q8_0
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*')"
}
for r in 1 2 3; do run head 0.5b-q8_0; run x8off 0.5b-q8_0 OCTO_GEMV_X8=0; done
timeout 90 /tmp/peer-bin/llama-bench -m $S/qwen2.5-0.5b-q8_0.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
say "peer 0.5b: $(python3 -c 'import sys,json
for l in open(sys.argv[1]): d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")' $OUT/peer.jsonl)"
run head 0.5b-q8_0
ready 7b-q4_k_m
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly behind the hills.']*25))")
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,power.draw,utilization.gpu --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
user() {  # label env...
  local l=$1; shift
  sleep 8
  say "qwen_generate $l start"
  env "$@" timeout 100 $B/qwen_generate --model $S/qwen2.5-7b-q4_k_m.gguf -p "$P" -n 16 --json 2>>$OUT/log.txt | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read())['summary']; d.pop('layers',None); d['v']='$l'; print(json.dumps(d))" >> $OUT/user.jsonl
  say "qwen_generate $l end: $(tail -1 $OUT/user.jsonl | grep -o '"prefill_tok_s": [0-9.]*')"
}
for r in 1 2; do user awake; user asleep OCTO_KEEP_AWAKE=0; done
kill $SMI
timeout 120 $B/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 550 --decode-tokens 16 --repeat 2 2>>$OUT/log.txt | sed 's/^{/{"v":"bench550",/' >> $OUT/decode.jsonl
say "bench 7b 550: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"first_prefill_ms":[0-9.]*' | tr '\n' ' ')"
say done
