#!/usr/bin/env bash
# Device call 1: the GEMV planner's rows per workgroup (OCTO_GEMV_NR) and width (OCTO_GEMV_WG) swept
# inside bench_decode (decode tok/s of the whole step, not chained GEMVs), tree at ae6ffb7.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
run() {  # model label env...
  local m=$1 l=$2; shift 2
  env "$@" $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "$m $l" >> $OUT/sweep.jsonl 2>>$OUT/log.txt
}
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 0.5b-q4_k_m 7b-q4_k_m; do
  while [ ! -f $S/qwen2.5-$m.gguf ] || pgrep -f "convert.*qwen2.5-$m" >/dev/null; do sleep 3; done
  sleep 2
  say "$m"
  run $m default
  for nr in 2 8 16; do run $m nr$nr OCTO_GEMV_NR=$nr; done
  for wg in 32 64 256; do run $m wg$wg OCTO_GEMV_WG=$wg; done
  run $m nr8wg64 OCTO_GEMV_NR=8 OCTO_GEMV_WG=64
  run $m nr16wg32 OCTO_GEMV_NR=16 OCTO_GEMV_WG=32
  run $m default2
done
for m in 1.5b-q4_k_m 1.5b-q8_0; do
  $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 1 --profile --name "$m prof" >> $OUT/profile.txt 2>&1
  OCTO_GEMV_NR=8 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 1 --profile --name "$m prof nr8" >> $OUT/profile.txt 2>&1
done
say done
