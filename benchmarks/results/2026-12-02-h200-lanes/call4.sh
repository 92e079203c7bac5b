#!/usr/bin/env bash
# Device call 4 (new2's binaries): where a 7B Q4_K_M decode step goes (bench_decode --profile), and two
# more lane shapes of the rounding GEMV_ADDs at the 7B's 224 workgroups (2 lanes of 256 over 8 columns,
# 8 lanes of 64 over 2), against the default, alternating.
# Run: bash benchmarks/results/2026-12-02-h200-lanes/call4.sh   (carry .carry-s24, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s24
mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
say "model ready"
run() {  # label env...
  local l=$1; shift
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "7b-q4_k_m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m.txt 2>&1
say "profile done"
run default; run v6 OCTO_GEMV_NR_ROUND=8 OCTO_GEMV_WG_ROUND=256; run v3 OCTO_GEMV_NR_ROUND=2 OCTO_GEMV_WG_ROUND=64
run default; run v6 OCTO_GEMV_NR_ROUND=8 OCTO_GEMV_WG_ROUND=256; run v3 OCTO_GEMV_NR_ROUND=2 OCTO_GEMV_WG_ROUND=64
say done
