#!/usr/bin/env bash
# Device call 2 (new2: OCTO_PIPELINE_STATS): the driver's statistics of every decode pipeline (registers,
# shared memory; VK_KHR_pipeline_executable_properties) on 7B Q4_K_M, 7B Q8_0's shapes aside, 1.5B Q4_K_M
# and 0.5B Q8_0, from a short bench_decode each (fresh pipeline cache).
# Run: bash benchmarks/results/2026-12-02-h200-ksplit/call2.sh   (carry .carry-s25, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s25
mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1
say "models ready: $(ls $S | tr '\n' ' ')"
for m in 7b-q4_k_m 1.5b-q4_k_m 1.5b-q8_0 0.5b-q8_0; do
  OCTO_PIPELINE_STATS=1 timeout 90 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 1 \
    > $OUT/decode-$m.jsonl 2> $OUT/stats-$m.txt
  say "$m: $(grep -c '^octo: pipeline' $OUT/stats-$m.txt) pipelines; $(grep -o '"decode_tok_s":[0-9.]*' $OUT/decode-$m.jsonl | tail -1)"
done
say done
