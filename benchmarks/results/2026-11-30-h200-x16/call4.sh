#!/usr/bin/env bash
# Device call 4 (probe): gemm_coop's K loop in three stages (two register sets of loads in flight, spec
# constant 7, OCTO_GEMM_DEEP=1, with X16 only), built as `deep` (main at 2d1b3c1 + the three-stage loop,
# uncommitted); `head` is call2's binaries (2d1b3c1). gpu_gemm_tiles on the card with the three stages
# forced wherever X16 runs; bench_gemm on the 1.5B and 7B shapes at 512 rows, alternating.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call4.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
mkdir -p /tmp/head /tmp/deep; tar -xJf .carry-p21/head.tar.xz -C /tmp/head; tar -xJf .carry-p21/deep.tar.xz -C /tmp/deep
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
OCTO_GEMM_DEEP=1 timeout 200 /tmp/deep/bin/gpu_gemm_tiles > $OUT/gpu_gemm_tiles-deep.txt 2>&1
say "gpu_gemm_tiles (OCTO_GEMM_DEQUANT unset, OCTO_GEMM_DEEP=1): exit $? $(grep 'assertions' $OUT/gpu_gemm_tiles-deep.txt)"
bench() {  # label binary env...
  local l=$1 b=$2; shift 2
  env "$@" timeout 120 /tmp/$b/bin/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16 --kernels auto 2>>$OUT/log.txt \
    | sed "s/^{/{\"cfg\":\"$l\",/" >> $OUT/gemm.jsonl
  say "$l: $(grep "\"cfg\":\"$l\"" $OUT/gemm.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["model"], d.get("shape","model"), round(d["tflop_s"],1), end="; ")')"
}
for r in 1 2; do
  bench head$r head
  bench deep-off$r deep
  bench deep-on$r deep OCTO_GEMM_DEEP=1
  bench deep-on-bk64-$r deep OCTO_GEMM_DEEP=1 OCTO_GEMM_BK=64
  bench deep-on-bk32-$r deep OCTO_GEMM_DEEP=1 OCTO_GEMM_BK=32
done
say done
