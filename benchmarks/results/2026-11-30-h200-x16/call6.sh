#!/usr/bin/env bash
# Device call 6 (call5's binaries: X16 and the three-stage loop by default): gemm_coopf's tiles swept
# with them, per shape (bench_gemm, F16 weights, 512 rows, 0.5B / 1.5B / 7B), OCTO_GEMM_COOP=wg,wm,fm,fn
# forced where it fits.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call6.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
mkdir -p /tmp/head; tar -xJf .carry-p21/head.tar.xz -C /tmp/head
B=/tmp/head/bin
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bench() {  # label env...
  local l=$1; shift
  env "$@" timeout 120 $B/bench_gemm --models 0.5b,1.5b,7b --tokens 512 --dtypes f16 --kernels auto 2>>$OUT/log.txt \
    | sed "s/^{/{\"cfg\":\"$l\",/" >> $OUT/gemm.jsonl
  say "$l: $(grep "\"cfg\":\"$l\"" $OUT/gemm.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l)
  if "tflop_s" in d: print(d["model"], d.get("shape","model"), round(d["tflop_s"],1), end="; ")')"
}
bench default
for c in 128,2,4,4 128,2,2,4 256,4,2,4 256,2,2,4 256,2,4,4 256,2,2,2 128,4,2,4 128,1,4,4; do bench "c$c" OCTO_GEMM_COOP=$c; done
bench default-again
say done
