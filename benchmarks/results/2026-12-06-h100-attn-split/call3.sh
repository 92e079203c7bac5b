#!/usr/bin/env bash
# Device call 3: bench_gemm at 512 rows on the 1.5B and 7B shapes (issue 17's 150 TFLOP/s target), the
# planner's default kernel (gemm_coopf with f16 weight rows ahead from 256 rows), F16, Q8_0 and Q4_K.
# Run: bash benchmarks/results/2026-12-06-h100-attn-split/call3.sh   (carry .carry-s33 with new3.tar.xz, .gl)
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
rm -rf /tmp/new3; mkdir -p /tmp/new3; tar -xJf .carry-s33/new3.tar.xz -C /tmp/new3
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/log.txt 2>&1
timeout 200 /tmp/new3/bin/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q8_0,q4_k --kernels auto --passes 10 > $OUT/gemm.jsonl 2>>$OUT/log.txt
echo "exit $?" >> $OUT/log.txt
python3 -c '
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); print({k:d[k] for k in d if k in ("model","dtype","kernel","tokens","tflops","us","shape","name")})
' $OUT/gemm.jsonl | head -40
