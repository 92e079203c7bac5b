#!/usr/bin/env bash
# Device call 4 (call3's binaries): where a decode step goes now (bench_decode --profile, the new default,
# 1.5B Q8_0 and 7B Q8_0), and the 0.5B's 1% (call3): new against base with OCTO_GEMV_X8=0 in both (its
# LM head then rounds x in every workgroup, the same kernels in both builds but for the new lanes code).
# Run: bash benchmarks/results/2026-12-02-h200-writer/call4.sh   (carry .carry-s23, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s23
mkdir -p /tmp/new /tmp/base; tar -xJf $C/new3.tar.xz -C /tmp/new; tar -xJf $C/base.tar.xz -C /tmp/base
N=/tmp/new/bin; BB=/tmp/base/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $BB --keep --no-bench > $OUT/models-log.txt 2>&1
say "small models ready"
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $BB --keep --no-bench >> $OUT/models-log.txt 2>&1; touch /tmp/7b-ready ) &
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 60 $b/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
n=0; while [ ! -f /tmp/7b-ready ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done
say "7b ready"
for r in 1 2; do
  run new $N 0.5b-q8_0; run base $BB 0.5b-q8_0
  run new-x8off $N 0.5b-q8_0 OCTO_GEMV_X8=0; run base-x8off $BB 0.5b-q8_0 OCTO_GEMV_X8=0
done
timeout 60 $N/bench_decode --model $S/qwen2.5-1.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-1.5b-q8_0.txt 2>&1
timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q8_0.txt 2>&1
say done
