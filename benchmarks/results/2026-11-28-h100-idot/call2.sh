#!/usr/bin/env bash
# Device call 2 (seventh session): where the float decode GEMVs lose bandwidth. bench_gemv_bandwidth
# (call1's binary with OCTO_GEMV_IDOT=0: the float loops, as in the reverted tree) over the LM head
# (152064 x 3584 and halves), the 7B down projection (3584 x 18944), gate|up and q/o, in Q8_0, Q4_K and
# Q6_K, chained tasks over 2 GiB of weight copies, at the planner's default and forced rows per
# workgroup (OCTO_GEMV_NR) / workgroup widths (OCTO_GEMV_WG). One JSON line per case in sweep.jsonl,
# each config preceded by a {"config": ...} line.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache OCTO_GEMV_IDOT=0
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin
G="--bandwidth-gbs 3071 --passes 10 --chain-mib 2048 --dtypes q8_0,q4_k,q6_k --sizes 152064x3584,76032x3584,38016x3584,37888x3584,3584x18944,3584x3584,151936x1536,8960x1536,1536x8960"
for cfg in "default" "NR=2" "NR=8" "NR=16" "WG=64" "WG=256" "WG=512" "NR=8 WG=256"; do
  echo "{\"config\":\"$cfg\"}" >> $OUT/sweep.jsonl
  env $(for kv in $cfg; do case $kv in NR=*) echo OCTO_GEMV_NR=${kv#NR=};; WG=*) echo OCTO_GEMV_WG=${kv#WG=};; esac; done) \
    $B/bench_gemv_bandwidth $G >> $OUT/sweep.jsonl 2>>$OUT/log.txt
  echo "[$(date +%T)] $cfg" >> $OUT/log.txt
done
