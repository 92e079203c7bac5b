#!/usr/bin/env bash
# Device call 4 (new3: K4H = 2 for the Q4_K gate|up pairs from rows of 1536, not 3072): 1.5B Q4_K_M at
# the new threshold against OCTO_GEMV_K4H=1 (the landed rule there), alternating, two rounds; a profile.
# Run: bash benchmarks/results/2026-12-03-h200-halves/call4.sh   (carry .carry-s29, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s29
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new3.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
[ -f $S/qwen2.5-1.5b-q4_k_m.gguf ] || bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
run() {  # label env...
  local l=$1; shift
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-1.5b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "1.5b-q4_k_m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for r in 1 2 3; do run k1536 ; run k1 OCTO_GEMV_K4H=1; done
timeout 90 $N/bench_decode --model $S/qwen2.5-1.5b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-1.5b-q4_k_m-k1536.txt 2>&1
say done
