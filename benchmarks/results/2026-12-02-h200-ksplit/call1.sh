#!/usr/bin/env bash
# Device call 1: the rounding GEMV_ADD with each row's chunks split over 2 or 4 workgroups
# (OCTO_GEMV_KSPLIT, gemv.comp KSPLIT) against none, alternating: 7B Q4_K_M (the FFN residual over
# K = 18944, 224 runs), 7B Q8_0 and 1.5B Q4_K_M; the writer's conformance case on the card; a 7B profile at 2.
# Run: bash benchmarks/results/2026-12-02-h200-ksplit/call1.sh   (carry .carry-s25, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s25
mkdir -p /tmp/new; tar -xJf $C/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv >> $OUT/log.txt 2>&1
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b,1.5b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
say "models ready: $(ls $S)"
for ks in 2 4; do
  OCTO_GEMV_KSPLIT=$ks timeout 120 $N/gpu_conformance_gemv -tc="*rounded by the GEMV_ADD*" > $OUT/conformance-ksplit$ks.txt 2>&1
  say "conformance writer case, KSPLIT=$ks: $(tail -2 $OUT/conformance-ksplit$ks.txt | head -1)"
done
timeout 120 $N/gpu_conformance_gemv -tc="*rounded by the GEMV_ADD*" > $OUT/conformance.txt 2>&1
say "conformance writer case (its own variants): $(tail -2 $OUT/conformance.txt | head -1)"
run() {  # model label env...
  local m=$1 l=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"m\":\"$m\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for r in 1 2; do
  run 7b-q4_k_m ks1; run 7b-q4_k_m ks2 OCTO_GEMV_KSPLIT=2; run 7b-q4_k_m ks4 OCTO_GEMV_KSPLIT=4
done
for r in 1 2; do
  run 1.5b-q4_k_m ks1; run 1.5b-q4_k_m ks2 OCTO_GEMV_KSPLIT=2; run 1.5b-q4_k_m ks2w OCTO_GEMV_KSPLIT=2 OCTO_GEMV_NR_ROUND=4 OCTO_GEMV_WG_ROUND=128
done
OCTO_GEMV_KSPLIT=2 timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m-ks2.txt 2>&1
say "profile done"
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1
say "7B Q8_0 ready"
for r in 1 2; do
  run 7b-q8_0 ks1; run 7b-q8_0 ks2 OCTO_GEMV_KSPLIT=2; run 7b-q8_0 ks4 OCTO_GEMV_KSPLIT=4
done
say done
