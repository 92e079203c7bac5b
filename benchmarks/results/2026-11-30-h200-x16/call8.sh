#!/usr/bin/env bash
# Device call 8 (probe): gemm_coop's K loop in four stages (three register sets, OCTO_GEMM_DEEP=4,
# spec constant 7 = 2; main at 5102568 + the probe, uncommitted) against the three stages (default).
# bench_gemm on the 0.5B / 1.5B / 7B shapes at 512 rows (F16), alternating.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call8.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
mkdir -p /tmp/deep4; tar -xJf .carry-p21/deep4.tar.xz -C /tmp/deep4
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
bench() {  # label env...
  local l=$1; shift
  env "$@" timeout 120 /tmp/deep4/bin/bench_gemm --models 0.5b,1.5b,7b --tokens 512 --dtypes f16 --kernels auto 2>>$OUT/log.txt \
    | sed "s/^{/{\"cfg\":\"$l\",/" >> $OUT/gemm.jsonl
  say "$l: $(grep "\"cfg\":\"$l\"" $OUT/gemm.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l)
  if "tflop_s" in d: print(d["model"], d.get("shape","model"), round(d["tflop_s"],1), end="; ")')"
}
for r in 1 2; do
  bench three$r
  bench four$r OCTO_GEMM_DEEP=4
done
say done
