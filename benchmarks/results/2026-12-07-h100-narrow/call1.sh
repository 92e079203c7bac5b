#!/usr/bin/env bash
# Device call 1 (thirty-ninth session): the 32 x 32 tensor-core tiles for narrow outputs (kernels/gemm.cpp
# coop_narrow, OCTO_GEMM_NARROW=1; the K / V projections) -- the thirty-eighth session's call9.sh, never
# run -- and where decode time goes on the weakest shapes (Qwen3-0.6B, 7B Q8_0).
# 1. Conformance of the narrow configuration on the card (gpu_gemm_tiles' every-configuration K loop and
#    the fused forms over many rows with their RoPE / KV epilogue, OCTO_GEMM_NARROW=1); stop on failure.
# 2. bench_gemm (0.5B, 1.5B, 7B shapes, 512 rows, Q8_0) with and without; pp512 with and without,
#    alternating, two rounds (Qwen3-0.6B, Qwen2.5-0.5B, 1.5B Q8_0; 7B Q8_0 once made).
# 3. bench_gemv_bandwidth on the 0.5B and 7B shapes (the plain GEMV kernels, Q8_0 / Q4_K / Q6_K / F16).
# 4. bench_decode --profile (tasks serialized) at a 512-token prompt: Qwen3-0.6B, 0.5B and 7B Q8_0.
# Binaries: .carry-s39/new.tar.xz (tools/build_for_device.sh at 327c049). No peer (the last call8 has it).
# Run: bash benchmarks/results/2026-12-07-h100-narrow/call1.sh   (carry .carry-s39, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s39/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
( bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b,0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "models made"
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $N --keep --no-bench > $OUT/models7b-log.txt 2>&1; say "7b made" ) &
models=$!
$N/octo_devices --boot >> $OUT/log.txt 2>&1; say "probe: $(grep -o 'mma layout [0-9]' $OUT/log.txt)"
conf() { local t=$1; shift; echo "=== $t $*" >> $OUT/conf.txt
  timeout 200 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"; }
OCTO_GEMM_NARROW=1 conf gpu_gemm_tiles -tc="*double-buffered K loop*,*default precision*"
OCTO_GEMM_NARROW=1 conf gpu_conformance_fused -tc="*over many rows*"
if grep -q "failed: [1-9]\|[1-9][0-9]* failed" $OUT/conf.txt; then say "conformance failed: stopping"; kill $models 2>/dev/null; exit 1; fi
for r in 1 2; do
  for v in 1 ""; do
    OCTO_GEMM_NARROW=$v timeout 90 $N/bench_gemm --models 0.5b,1.5b,7b --tokens 512 --dtypes q8_0 --kernels auto --passes 10 2>>$OUT/log.txt | sed "s/^{/{\"narrow\":\"$v\",\"round\":$r,/" >> $OUT/gemm.jsonl
  done
done
say "bench_gemm done"
timeout 120 $N/bench_gemv_bandwidth --sizes 896x896,128x896,4864x896,896x4864,3584x3584,512x3584,18944x3584,3584x18944 --dtypes q8_0,q4_k,q6_k,f16 --bandwidth-gbs 3071 --passes 30 > $OUT/gemv.jsonl 2>>$OUT/log.txt
say "gemv bandwidth done"
wait_for() { while ! grep -q "$1" $OUT/log.txt; do sleep 2; done; }
wait_for "models made"
for r in 1 2; do
  for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
    for v in 1 ""; do
      OCTO_GEMM_NARROW=$v timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"narrow\":\"$v\",\"round\":$r,/" >> $OUT/decode.jsonl
      say "$m narrow=$v: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
    done
  done
done
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0; do
  timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 1 --bandwidth-gbs 3071 --profile > $OUT/profile-$m.txt 2>&1
  say "profile $m: $(grep -A12 'where a decode step goes' $OUT/profile-$m.txt | tr -s ' ' | tr '\n' ';')"
done
# Decode knobs never measured on Qwen3's shapes (head_dim 128, 8 KV heads, the per-head norms' arrival
# counters): the narrow GEMVs' rows per workgroup and decode attention's keys a chunk.
for r in 1 2; do
  for kv in "" OCTO_GEMV_NR_NARROW=4 OCTO_GEMV_NR_NARROW=8 OCTO_ATTENTION_KEYS=32 OCTO_ATTENTION_KEYS=128; do
    for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0; do
      env $kv timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$kv\",\"round\":$r,/" >> $OUT/knobs.jsonl
      say "$m $kv: $(tail -1 $OUT/knobs.jsonl | grep -o '"decode_tok_s":[0-9.]*')"
    done
  done
done
wait $models
if [ -f $S/qwen2.5-7b-q8_0.gguf ]; then
  for v in 1 ""; do
    OCTO_GEMM_NARROW=$v timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q8_0.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"narrow\":\"$v\",/" >> $OUT/decode.jsonl
    say "7b narrow=$v: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
  done
  timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 1 --bandwidth-gbs 3071 --profile > $OUT/profile-qwen2.5-7b-q8_0.txt 2>&1
  say "profile 7b: $(grep -A12 'where a decode step goes' $OUT/profile-qwen2.5-7b-q8_0.txt | tr -s ' ' | tr '\n' ';')"
fi
say done
