#!/usr/bin/env bash
# Device call 3: rows per workgroup for the integer loops' wide GEMVs (gate|up, the LM head) in the
# K-quants, which keep 4 (the 32-element formats take 8 from K >= 3072): OCTO_GEMV_NR_WIDE=8 and 16
# against the default on 1.5B and 7B Q4_K_M, 16 against the default 8 on 7B Q8_0; alternating, two
# rounds. Same binaries as call2.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 1.5b-q4_k_m 7b-q4_k_m; do ready $m
  for r in 1 2; do run default $m X=1; run wide8 $m OCTO_GEMV_NR_WIDE=8; run wide16 $m OCTO_GEMV_NR_WIDE=16; done; say "decode $m"; done
ready 7b-q8_0
for r in 1 2; do run default 7b-q8_0 X=1; run wide16 7b-q8_0 OCTO_GEMV_NR_WIDE=16; done; say "decode 7b-q8_0"
say done
