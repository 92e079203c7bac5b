#!/usr/bin/env bash
# Device call 1 (new1 at d3e7c5e: the SWIGLU rounds its row for the down projection,
# OCTO_GEMV_SWIGLU_ROUND): its conformance cases on the card; decode with it against without it,
# alternating, two rounds; bench_decode_q6probe (timing only, wrong values: the Q6_K integer loop reads
# its block with aligned 16-byte loads, as a 16-byte-aligned repacking would) on 7B Q4_K_M; where a 7B
# Q4_K_M step goes (--profile, tasks serialized) with it, without it, and in the probe; the driver's
# statistics of the 7B's decode pipelines (OCTO_PIPELINE_STATS=1: registers, shared memory).
# Run: bash benchmarks/results/2026-12-02-h200-act-runs/call1.sh   (carry .carry-s26, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s26
mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b,1.5b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1 &
(cd /tmp && timeout 120 $N/gpu_conformance_gemv -tc="*RMSNORM_SWIGLU that wrote*,*GEMV_ADD that wrote*" > $OUT/conformance.txt 2>&1; echo "rc $?" >> $OUT/conformance.txt)
say "conformance: $(tail -4 $OUT/conformance.txt | tr '\n' ' ')"
wait
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1
say "models ready: $(ls $S | tr '\n' ' ')"
for r in 1 2; do for m in 7b-q4_k_m 1.5b-q4_k_m 1.5b-q8_0 0.5b-q8_0; do for v in 1 0 p; do
  [ $v = p ] && [ $m != 7b-q4_k_m ] && continue
  B=$N/bench_decode; [ $v = p ] && B=$N/bench_decode_q6probe
  OCTO_GEMV_SWIGLU_ROUND=${v/p/1} timeout 60 $B --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"round$v\",/" >> $OUT/decode.jsonl
  say "$m round=$v: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
done; done; done
for v in 1 0 p; do
  B=$N/bench_decode; [ $v = p ] && B=$N/bench_decode_q6probe
  OCTO_GEMV_SWIGLU_ROUND=${v/p/1} timeout 90 $B --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m-round$v.txt 2>&1
  say "7b profile round=$v: $(grep -o '"role":"GEMV_ADD ffn_residual","count":28,"us":[0-9.]*' $OUT/profile-7b-q4_k_m-round$v.txt)"
done
OCTO_PIPELINE_STATS=1 timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 1 \
  > $OUT/stats-decode-7b-q4_k_m.jsonl 2> $OUT/stats-7b-q4_k_m.txt
say "stats: $(grep -c '^octo: pipeline' $OUT/stats-7b-q4_k_m.txt) pipelines"
say done
