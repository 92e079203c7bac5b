#!/usr/bin/env bash
# Device call 3 (main at 2d1b3c1, the X16 GEMMs by default): gemm_coopf's configurations and K steps
# swept again now that x comes as f16 (fewer registers for the x tiles): bench_gemm on the 1.5B and 7B
# shapes at 512 rows (F16 weights; the quantized ones read their f16 copies the same way), each
# OCTO_GEMM_COOP=wg,wm,fm,fn (forced for every shape where it fits) with OCTO_GEMM_BK=32 and 64.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call3.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
mkdir -p /tmp/head; tar -xJf .carry-p21/head.tar.xz -C /tmp/head
B=/tmp/head/bin
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bench() {  # label env...
  local l=$1; shift
  env "$@" timeout 120 $B/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16 --kernels auto 2>>$OUT/log.txt \
    | sed "s/^{/{\"cfg\":\"$l\",/" >> $OUT/gemm.jsonl
  say "$l: $(grep "\"cfg\":\"$l\"" $OUT/gemm.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["model"], d.get("shape","model"), round(d["tflop_s"],1), end="; ")')"
}
bench default
bench x16off OCTO_GEMM_X16=0
for bk in 32 64; do
  bench bk$bk OCTO_GEMM_BK=$bk
  for c in 256,2,4,4 256,4,2,8 256,1,8,2 256,8,1,16 256,2,2,2 128,2,2,4 512,4,2,4 512,2,4,2 512,8,1,8 128,1,4,8 128,2,4,4; do
    bench "c$c-bk$bk" OCTO_GEMM_COOP=$c OCTO_GEMM_BK=$bk
  done
done
bench default-again
say done
