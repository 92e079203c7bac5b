#!/usr/bin/env bash
# Device call 3: the 16-bit GEMVs' new shape rule (narrow outputs 256 invocations, wide 64) against the
# old one (OCTO_GEMV_WG_NARROW=64) and other widths and rows, alternating, two rounds, on 0.5B and 1.5B F16;
# serialized profiles of the new default.
# Run: bash benchmarks/results/2026-12-02-h200-argmax/call3.sh   (carry .carry-s27, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s27
mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types f16 --scratch $S --bin $N --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; [ -f $S/qwen2.5-$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
prof() {  # model label env...
  local m=$1 l=$2; shift 2
  env "$@" timeout 90 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile 2>&1 | grep -v '"profile_task"' > $OUT/profile-$m-$l.txt; say "profile $m $l done"; }
for m in 0.5b-f16 1.5b-f16; do
  ready $m; say "$m ready"
  for r in 1 2; do
    run new $m; run old $m OCTO_GEMV_WG_NARROW=64; run n128 $m OCTO_GEMV_WG_NARROW=128; run n512 $m OCTO_GEMV_WG_NARROW=512
    run w32 $m OCTO_GEMV_WG_WIDE=32; run w128 $m OCTO_GEMV_WG_WIDE=128; run wnr4 $m OCTO_GEMV_NR_WIDE16=4; run wnr4w32 $m OCTO_GEMV_NR_WIDE16=4 OCTO_GEMV_WG_WIDE=32
  done
  prof $m new; prof $m wnr4 OCTO_GEMV_NR_WIDE16=4
done
say done
