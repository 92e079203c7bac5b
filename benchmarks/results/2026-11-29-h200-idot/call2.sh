#!/usr/bin/env bash
# Device call 2: the integer-dot GEMVs' rows and width per workgroup. bench_gemv_bandwidth on 7B shapes
# with OCTO_GEMV_NR 2 / 4 / 8 and the default (one process each, two rounds), the down projection's
# width (OCTO_GEMV_WG 256); bench_decode with the default rule against OCTO_GEMV_NR=4 everywhere on
# 0.5B Q8_0, 1.5B Q8_0 / Q4_K_M, 7B Q4_K_M / Q8_0; the GEMV conformance (NaN / infinity case) on the card.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_conformance_gemv > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 1 passed"
for r in 1 2; do for nr in default 2 4 8 wg256; do
  e=X=1; case $nr in default) ;; wg256) e=OCTO_GEMV_WG=256;; *) e=OCTO_GEMV_NR=$nr;; esac
  env $e timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584,512x3584,1536x8960,3072x1536 --dtypes q4_k,q6_k,q8_0 --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"nr\":\"$nr\",\"round\":$r,/" >> $OUT/gemv.jsonl 2>>$OUT/log.txt
done; done
say gemv
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m 7b-q8_0; do
  ready $m; run default $m X=1; run nr4 $m OCTO_GEMV_NR=4; run default $m X=1; run nr4 $m OCTO_GEMV_NR=4
done
say done
