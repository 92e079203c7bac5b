#!/usr/bin/env bash
# Device call 5 (seventh session): is bench_gemv_bandwidth's slowdown within one process (call2) a
# property of the process's history? The same Q8_0 3584 x 3584 case six times in one process, with
# 512 MiB and with 2 GiB of chained weight copies, and after a 152064 x 3584 case; bench built at the
# committed tree.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin
S6=3584x3584,3584x3584,3584x3584,3584x3584,3584x3584,3584x3584
for chain in 512 2048; do
  echo "{\"config\":\"same case x6, chain $chain MiB\"}" >> $OUT/order.jsonl
  $B/bench_gemv_bandwidth --bandwidth-gbs 3071 --passes 10 --chain-mib $chain --dtypes q8_0 --sizes $S6 >> $OUT/order.jsonl 2>>$OUT/log.txt
done
echo "{\"config\":\"LM head first, then the same case x6, chain 512 MiB\"}" >> $OUT/order.jsonl
$B/bench_gemv_bandwidth --bandwidth-gbs 3071 --passes 10 --chain-mib 512 --dtypes q8_0 --sizes 152064x3584,$S6 >> $OUT/order.jsonl 2>>$OUT/log.txt
echo "[$(date +%T)] done" >> $OUT/log.txt
