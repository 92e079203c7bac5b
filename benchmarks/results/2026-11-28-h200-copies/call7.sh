#!/usr/bin/env bash
# Device call 7: prefill speed against the prompt's length around 512 (call4: 7B Q4_K_M 550 tokens in
# 90.8 ms against 512 in 65.2): bench_decode on 1.5B Q4_K_M at 384..768 prompt tokens, best of 2.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
[ -f $S/qwen2.5-1.5b-q4_k_m.gguf ] || bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
for p in 384 448 512 513 550 576 640 704 768; do
  timeout 60 $B/bench_decode --model $S/qwen2.5-1.5b-q4_k_m.gguf --prompt-tokens $p --decode-tokens 4 --repeat 2 2>>$OUT/log.txt >> $OUT/decode.jsonl
done
say done
