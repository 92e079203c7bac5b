#!/usr/bin/env bash
# Device call 4 (the session's last 260 s): the GEMM kernels' fused epilogue as a specialization
# constant (the plain GEMM compiles without the norm's code) against 41d0f2d's, bench_gemm on the 1.5B
# and 7B shapes; the fused epilogues' conformance and the fused prefill head on the card.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && tar -xJf old.tar.xz)
B=$PWD/.carry-gemm/bin; O=$PWD/.carry-gemm/old
for r in 1 2; do
  for v in new old41; do
    d=$B; [ $v = new ] || d=$O/$v
    timeout 40 $d/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q4_k --kernels auto --passes 10 | sed "s/^{/{\"build\":\"$v\",/" >> $OUT/gemm.jsonl 2>>$OUT/log.txt
  done
done
timeout 60 $B/gpu_conformance_fused -tc="*over many rows*" > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
timeout 60 $B/gpu_prefill_head >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
grep -c "Status: SUCCESS" $OUT/tests.txt
