#!/usr/bin/env bash
# Device call 3 (new2's binaries; knobs only): the 7B Q4_K_M's down projections (GEMV_ADD over rows of
# 18944, half of them Q6_K, the others Q4_K; rounded for the next layer's norm GEMVs in lanes) at other
# row counts and lane widths: OCTO_GEMV_NR_LONG=2|8 (default 4) and OCTO_GEMV_WG_ROUND=64|256 (default
# 128), alternating with the default; profiles (per task, so per layer's format) of three of them.
# Run: bash benchmarks/results/2026-12-03-h200-halves/call3.sh   (carry .carry-s29, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s29
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
[ -f $S/qwen2.5-7b-q4_k_m.gguf ] || bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
run() {  # label env...
  local l=$1; shift
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "7b-q4_k_m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
prof() { local l=$1; shift; env "$@" timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m-$l.txt 2>&1; say "profile $l exit $?"; }
run default; run nr8 OCTO_GEMV_NR_LONG=8; run nr2 OCTO_GEMV_NR_LONG=2; run wg256 OCTO_GEMV_WG_ROUND=256; run wg64 OCTO_GEMV_WG_ROUND=64
run default; run nr8 OCTO_GEMV_NR_LONG=8; run nr2 OCTO_GEMV_NR_LONG=2; run wg256 OCTO_GEMV_WG_ROUND=256; run wg64 OCTO_GEMV_WG_ROUND=64
prof default; prof nr8 OCTO_GEMV_NR_LONG=8; prof wg256 OCTO_GEMV_WG_ROUND=256
say done
