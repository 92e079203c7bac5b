#!/usr/bin/env bash
# Device call 5 (new4: the Q8_0 integer loop can take whole 34-byte blocks as chunks, OCTO_GEMV_HALVES=2;
# off by default): every Q8_0 GEMV at HALVES 2 against the default, alternating, two rounds, on 0.5B and
# 1.5B Q8_0, profiles of both, then 7B Q8_0 if the call has time.
# Run: bash benchmarks/results/2026-12-03-h200-halves/call5.sh   (carry .carry-s29, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s29
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new4.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --keep-hf --no-bench;
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $N --keep --keep-hf --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 2; n=$((n+1)); done; sleep 1; [ -f $S/qwen2.5-$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
prof() { local m=$1 l=$2; shift 2; env "$@" timeout 90 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1; say "profile $m $l exit $?"; }
for m in 0.5b-q8_0 1.5b-q8_0; do
  ready $m
  for r in 1 2; do run h1 $m; run h2 $m OCTO_GEMV_HALVES=2; done
  prof $m h1; prof $m h2 OCTO_GEMV_HALVES=2
done
ready 7b-q8_0
for r in 1 2; do run h1 7b-q8_0; run h2 7b-q8_0 OCTO_GEMV_HALVES=2; done
say done
