#!/usr/bin/env bash
# Device call 2: rows per workgroup (OCTO_GEMV_NR 1 / 2 / 4; 1 means 2 for the paired SwiGLU / RoPE
# GEMVs) and width 64, decode tok/s per model, then per-role serialized profiles; tree at ae6ffb7.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
run() {  # model label env...
  local m=$1 l=$2; shift 2
  env "$@" $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "$m $l" >> $OUT/sweep.jsonl 2>>$OUT/log.txt
}
prof() {
  local m=$1 l=$2; shift 2
  echo "=== $m $l" >> $OUT/profile.txt
  env "$@" $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 1 --profile --name "$m $l" >> $OUT/profile.txt 2>&1
}
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 1.5b-q4_k_m 1.5b-q8_0 7b-q4_k_m 7b-q8_0 0.5b-q8_0; do
  ready $m; say "$m"
  run $m nr4 OCTO_GEMV_NR=4
  run $m nr2 OCTO_GEMV_NR=2
  run $m nr1 OCTO_GEMV_NR=1
  run $m nr2wg64 OCTO_GEMV_NR=2 OCTO_GEMV_WG=64
  run $m nr1wg64 OCTO_GEMV_NR=1 OCTO_GEMV_WG=64
  run $m nr4b OCTO_GEMV_NR=4
done
say profiles
prof 1.5b-q4_k_m nr4 OCTO_GEMV_NR=4
prof 1.5b-q4_k_m nr2 OCTO_GEMV_NR=2
prof 1.5b-q4_k_m nr1 OCTO_GEMV_NR=1
prof 7b-q4_k_m nr4 OCTO_GEMV_NR=4
prof 7b-q4_k_m nr2 OCTO_GEMV_NR=2
prof 1.5b-q8_0 nr1 OCTO_GEMV_NR=1
say done
