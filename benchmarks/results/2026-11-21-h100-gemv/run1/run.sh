#!/usr/bin/env bash
# Device run 1 (gemv helper): GPU conformance of GEMV/GEMM, before/after bandwidth, NR x WG sweep.
set -u
B=.carry-gemv/bin
OLD=.carry-gemv/before/bench_gemv_bandwidth
O=${OUT:-/tmp/out}
mkdir -p "$O"
S=3584x3584,18944x3584,3584x18944,152064x3584,1536x1536,8960x1536,1536x8960,151936x1536
D=f16,q8_0,q4_0,q5_0,q4_k,q5_k,q6_k
A="--bandwidth-gbs 3071 --chain-mib 128 --passes 20"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv; } > "$O/env.txt" 2>&1
t0=$(date +%s)
timeout 70 $B/gpu_conformance -tc='*GEMV*,*GEMM*' > "$O/conformance.txt" 2>&1; echo "conformance rc $? $(( $(date +%s)-t0 ))s" >> "$O/env.txt"
timeout 50 $OLD $A --sizes $S --dtypes $D > "$O/before.jsonl" 2>>"$O/env.txt"; echo "before rc $? $(( $(date +%s)-t0 ))s" >> "$O/env.txt"
timeout 50 $B/bench_gemv_bandwidth $A --sizes $S --dtypes $D > "$O/after.jsonl" 2>>"$O/env.txt"; echo "after rc $? $(( $(date +%s)-t0 ))s" >> "$O/env.txt"
for cfg in 2:64 4:32 4:64 4:128 8:64 8:128 8:256 16:128; do
  nr=${cfg%:*}; wg=${cfg#*:}
  [ $(( $(date +%s)-t0 )) -gt 215 ] && break
  OCTO_GEMV_NR=$nr OCTO_GEMV_WG=$wg timeout 30 $B/bench_gemv_bandwidth $A --sizes 3584x3584,18944x3584,152064x3584 \
    --dtypes f16,q8_0,q4_0,q4_k,q6_k 2>>"$O/env.txt" | sed "s/^{/{\"nr\":$nr,\"wg\":$wg,/" >> "$O/sweep.jsonl"
  echo "sweep $cfg $(( $(date +%s)-t0 ))s" >> "$O/env.txt"
done
