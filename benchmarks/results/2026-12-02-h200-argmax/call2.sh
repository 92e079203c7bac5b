#!/usr/bin/env bash
# Device call 2: the F16 decode GEMVs' shape through the knobs (OCTO_GEMV_WG, OCTO_GEMV_NR: every GEMV of an
# F16 model) on 0.5B and 1.5B F16, two rounds, with serialized profiles (call1's build).
# Run: bash benchmarks/results/2026-12-02-h200-argmax/call2.sh   (carry .carry-s27, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s27
mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo gpu_conformance; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
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
    run default $m; run wg128 $m OCTO_GEMV_WG=128; run wg256 $m OCTO_GEMV_WG=256
    run nr4 $m OCTO_GEMV_NR=4; run nr4wg256 $m OCTO_GEMV_NR=4 OCTO_GEMV_WG=256; run nr1wg256 $m OCTO_GEMV_NR=1 OCTO_GEMV_WG=256
  done
  prof $m default; prof $m wg256 OCTO_GEMV_WG=256; prof $m nr4wg256 OCTO_GEMV_NR=4 OCTO_GEMV_WG=256
done
say done
