#!/usr/bin/env bash
# Device call 4 (new3, now with its `octo`: call3 staged bench_decode alone, so make_bench_models.sh found
# no converter and the call timed out waiting for its models): the 7B Q4_K_M alone, the default against
# OCTO_GEMV_WG_SWIGLU=32, one run each (the session's device time nearly spent).
# Run: bash benchmarks/results/2026-12-02-h200-act-runs/call4.sh   (carry .carry-s26, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s26
mkdir -p /tmp/new; tar -xJf $C/new3.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
say "model ready"
for v in default wg32; do
  e=(); [ $v = wg32 ] && e=(OCTO_GEMV_WG_SWIGLU=32)
  env "${e[@]}" timeout 30 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 1 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$v\",/" >> $OUT/decode.jsonl
  say "7b-q4_k_m $v: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*')"
done
say done
