#!/usr/bin/env bash
# Device call 1 (timing probe, uncommitted planner knob OCTO_GEMM_X16_PROBE=1): gemm_coopf reads x as
# f16 rows (the buffer's f32 bytes taken as halves: wrong values, the loads and registers of an f16 x).
# bench_gemm on the 1.5B and 7B shapes at 512 rows, probe off / on alternating twice.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call1.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
mkdir -p /tmp/probe; tar -xJf .carry-p21/probe.tar.xz -C /tmp/probe
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for r in 1 2; do
  for p in 0 1; do
    OCTO_GEMM_X16_PROBE=$p timeout 150 /tmp/probe/bin/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q4_k,q8_0 --kernels auto 2>>$OUT/log.txt \
      | sed "s/^{/{\"probe\":$p,\"rep\":$r,/" >> $OUT/gemm.jsonl
    say "probe $p rep $r: $(grep "\"probe\":$p,\"rep\":$r," $OUT/gemm.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["model"], d["dtype"], d.get("shape","model"), round(d["tflop_s"],1), end="; ")')"
  done
done
say done
