#!/usr/bin/env bash
# Device call 9, NOT RUN (the thirty-eighth session's last 265 s of device time were too few to start a
# machine): 32 x 32 tensor-core tiles for outputs of at most 512 columns (kernels/gemm.cpp coop_narrow,
# on request with OCTO_GEMM_NARROW=1; the K / V projections).
# Conformance of the configuration on the card (gpu_gemm_tiles' every-configuration K loop, the fused
# forms over many rows with their RoPE / KV epilogue, both with OCTO_GEMM_NARROW=1), bench_gemm's K / V
# shape and pp512 with OCTO_GEMM_NARROW=1 against without (64 x 64), alternating. Rebuild the binaries
# first (the session's .carry-s38 is not kept). No peer (call8 has it).
# Run: bash benchmarks/results/2026-12-07-h100-ksplit/call9.sh   (carry .carry-s38, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s38/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "models made" ) &
models=$!
conf() { local t=$1; shift; echo "=== $t $*" >> $OUT/conf.txt
  timeout 100 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"; }
OCTO_GEMM_NARROW=1 conf gpu_gemm_tiles -tc="*double-buffered K loop*"
OCTO_GEMM_NARROW=1 conf gpu_conformance_fused -tc="*over many rows*"
if grep -q "[1-9][0-9]* failed" $OUT/conf.txt; then say "conformance failed: stopping"; kill $models 2>/dev/null; exit 1; fi
for v in 1 ""; do
  OCTO_GEMM_NARROW=$v timeout 40 $N/bench_gemm --models 0.5b,1.5b --tokens 512 --dtypes q8_0 --kernels auto --passes 10 2>>$OUT/log.txt | sed "s/^{/{\"narrow\":\"$v\",/" >> $OUT/gemm.jsonl
done
say "bench_gemm k_v: $(grep '"shape":"k_v"' $OUT/gemm.jsonl | grep -o '"narrow":"[0-9]*"\|"model":"[^"]*"\|"best_us":[0-9.]*' | tr '\n' ' ')"
wait $models
for r in 1 2; do
  for m in qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
    for v in 1 ""; do
      OCTO_GEMM_NARROW=$v timeout 30 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 16 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"narrow\":\"$v\",\"round\":$r,/" >> $OUT/decode.jsonl
      say "$m narrow=$v: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*')"
    done
  done
done
say done
