#!/usr/bin/env bash
# Device call 4: probes (wrong results, timing only) of what the integer-dot GEMVs' loads cost, from a
# build of 0fe1477 with /work/probe-15.diff (kept beside: probe.diff): spec constant PROBE through
# OCTO_GEMV_PROBE: 1 = x (and the RMSNORM weight) not loaded, made up in registers; 2 = the RMSNORM
# weight not loaded; 3 = Q8_0 quants read with one aligned 16-byte load (as a quants plane would give)
# instead of load16_even's four or five 4-byte loads; 4 = the Q4_K header (d, dmin, scales) not loaded.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz) && (cd .carry-probe && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; P=$PWD/.carry-probe/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 30 $P/bench_gemv_bandwidth --sizes 37888x3584 --dtypes q8_0 --passes 10 --bandwidth-gbs 4800 > /dev/null 2>&1  # warm-up
for r in 1 2; do for p in 0 1 3 4; do
  OCTO_GEMV_PROBE=$p timeout 60 $P/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584,4864x896 --dtypes q8_0,q4_k --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"probe\":$p,\"round\":$r,/" >> $OUT/gemv.jsonl 2>>$OUT/log.txt
done; done
say gemv
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $P/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-q8_0 7b-q8_0 7b-q4_k_m; do ready $m
  for p in 0 1 2 3 4; do
    case $m:$p in *q8_0:4|*q4_k_m:3) continue;; esac
    run probe$p $m OCTO_GEMV_PROBE=$p; done; say "decode $m"; done
say done
