#!/usr/bin/env bash
# Device run 2 (gemv helper): GPU conformance (x tile on and off), before/after bandwidth, LM heads in
# fresh processes, NR x WG sweep of the x-tile kernel.
set -u
B=.carry-gemv/bin
OLD=.carry-gemv/before/bench_gemv_bandwidth
O=${OUT:-/tmp/out}
mkdir -p "$O"
S=3584x3584,18944x3584,3584x18944,1536x1536,8960x1536,1536x8960
D=f16,q8_0,q4_0,q5_0,q4_k,q5_k,q6_k
A="--bandwidth-gbs 3071 --chain-mib 256 --passes 50"
t0=$(date +%s)
el() { echo "$1 rc $2 $(( $(date +%s)-t0 ))s" >> "$O/env.txt"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv; } > "$O/env.txt" 2>&1
timeout 70 $B/gpu_conformance -tc='*GEMV*,*GEMM*' > "$O/conformance.txt" 2>&1; el conformance $?
OCTO_GEMV_XS=0 timeout 40 $B/gpu_conformance -tc='*decode shapes*,*65535*,*two tiles*' > "$O/conformance_xs0.txt" 2>&1; el conformance_xs0 $?
timeout 40 $OLD $A --sizes $S --dtypes $D > "$O/before.jsonl" 2>>"$O/env.txt"; el before $?
timeout 40 $B/bench_gemv_bandwidth $A --sizes $S --dtypes $D > "$O/after.jsonl" 2>>"$O/env.txt"; el after $?
OCTO_GEMV_XS=0 timeout 40 $B/bench_gemv_bandwidth $A --sizes $S --dtypes $D > "$O/after_xs0.jsonl" 2>>"$O/env.txt"; el after_xs0 $?
for sz in 152064x3584 151936x1536; do
  timeout 15 $OLD $A --passes 20 --sizes $sz --dtypes $D 2>>"$O/env.txt" | sed 's/^{/{"bin":"before",/' >> "$O/lmhead.jsonl"; el "lm_before_$sz" $?
  timeout 15 $B/bench_gemv_bandwidth $A --passes 20 --sizes $sz --dtypes $D 2>>"$O/env.txt" | sed 's/^{/{"bin":"after",/' >> "$O/lmhead.jsonl"; el "lm_after_$sz" $?
done
for cfg in 4:64 4:128 4:256 2:128 8:128 8:256 2:64 8:64; do
  nr=${cfg%:*}; wg=${cfg#*:}
  [ $(( $(date +%s)-t0 )) -gt 210 ] && break
  OCTO_GEMV_NR=$nr OCTO_GEMV_WG=$wg timeout 25 $B/bench_gemv_bandwidth $A --sizes 3584x3584,18944x3584,3584x18944 \
    --dtypes q8_0,q4_0,q4_k,q6_k 2>>"$O/env.txt" | sed "s/^{/{\"nr\":$nr,\"wg\":$wg,/" >> "$O/sweep.jsonl"
  el "sweep_$cfg" 0
done
