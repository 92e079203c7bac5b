#!/usr/bin/env bash
# Device call 6 (main at cff2e6c + the landed attention change: 256-invocation flash-decoding up to 8192
# keys, 128 past them, a third recorded range): 1.5B Q8_0 by context against OCTO_ATTENTION_WG=128 (the
# previous kernel exactly), alternating; the attention conformance cases on the card.
# Run: bash benchmarks/results/2026-11-29-h200-qkv/call6.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p19
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 $B/gpu_conformance -tc="*decode steps of one recording*,*flash decode attention sized*" > $OUT/conformance.txt 2>&1
say "gpu_conformance (attention): exit $? $(grep 'assertions' $OUT/conformance.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
at() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 150 $B/bench_decode --model $S/qwen2.5-$m.gguf --at-positions 1024,4096,8000,12288,16384 --decode-tokens 64 --ctx 16640 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/at.jsonl
  say "$m $l at: $(tail -5 $OUT/at.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
m=1.5b-q8_0; ready $m
run head $m; run wg128 $m OCTO_ATTENTION_WG=128
at head $m; at wg128 $m OCTO_ATTENTION_WG=128
at head $m
say done
