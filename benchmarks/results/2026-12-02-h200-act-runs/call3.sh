#!/usr/bin/env bash
# Device call 3 (new3: bench_decode at the commit adding OCTO_GEMV_WG_SWIGLU): the gate|up kernel's lanes
# of 32 (OCTO_GEMV_WG_SWIGLU=32: its rounding workgroups of 256 invocations, five a multiprocessor at 50
# registers, against the default's 512 of which two fit) against the default, alternating, two rounds;
# serialized profiles of 1.5B Q8_0 and of the 7B with the knob.
# Run: bash benchmarks/results/2026-12-02-h200-act-runs/call3.sh   (carry .carry-s26, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s26
mkdir -p /tmp/new; tar -xJf $C/new3.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b,7b --types q4_k_m --scratch $S --bin $N --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
ready 1.5b-q8_0; say "small models ready"
for r in 1 2; do for m in 0.5b-q8_0 1.5b-q8_0; do run default $m; run wg32 $m OCTO_GEMV_WG_SWIGLU=32; done; done
timeout 60 $N/bench_decode --model $S/qwen2.5-1.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-1.5b-q8_0.txt 2>&1
ready 7b-q4_k_m; say "all models ready"
for r in 1 2; do for m in 1.5b-q4_k_m 7b-q4_k_m; do run default $m; run wg32 $m OCTO_GEMV_WG_SWIGLU=32; done; done
OCTO_GEMV_WG_SWIGLU=32 timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m-wg32.txt 2>&1
say "7b wg32 profile: $(grep -o '"role":"RMSNORM_SWIGLU ffn_act","count":28,"us":[0-9.]*' $OUT/profile-7b-q4_k_m-wg32.txt)"
say done
