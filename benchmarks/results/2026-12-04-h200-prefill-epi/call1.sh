#!/usr/bin/env bash
# Device call 1 (main at 3e35b53 + the thirtieth session's review mends, uncommitted): where a small
# model's prefill goes. bench_decode --profile (tasks serialized, per opcode / role) on Qwen2.5-0.5B and
# 1.5B Q8_0 and Qwen3-0.6B Q8_0 layers (random weights), and the default runs beside them.
# Run: bash benchmarks/results/2026-12-04-h200-prefill-epi/call1.sh   (carry .carry-s32, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s32
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench; }
( mk 0.5b q8_0; mk qwen3-0.6b q8_0; mk 1.5b q8_0 ) > $OUT/models-log.txt 2>&1
say "models made"; ls -la $S/*.gguf >> $OUT/log.txt
run() {  # label model env...
  local l=$1 m=$2; shift 2
  [ -f $S/$m.gguf ] || { say "no $m"; return; }
  env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*' | tr '\n' ' ')"
}
prof() { local m=$1 l=$2; shift 2; [ -f $S/$m.gguf ] || return; env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1; say "profile $m $l exit $?"; }
for m in qwen2.5-0.5b-q8_0 qwen3-0.6b-q8_0 qwen2.5-1.5b-q8_0; do run def $m; prof $m def; done
say done
