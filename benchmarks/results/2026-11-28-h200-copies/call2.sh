#!/usr/bin/env bash
# Device call 2: (a) the quantized weights' f16 copies for prefill GEMMs (default; OCTO_WEIGHT_COPIES=0
# is the per-run dequantization into the shared scratch), (b) gemv.comp's UNROLL (OCTO_GEMV_UNROLL=2|4:
# chunks per main-loop iteration, their loads together) in bench_gemv_bandwidth (one process per
# setting) and bench_decode; the GEMM copy test and the GEMV conformance at UNROLL 2 on the card; the
# peer on 7B Q8_0.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $B/gpu_gemm_tiles > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
OCTO_GEMV_UNROLL=2 timeout 120 $B/gpu_conformance_gemv >> $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests $(grep -c 'Status: SUCCESS' $OUT/tests.txt) of 2 passed"
for r in 1 2; do for u in 1 2 4; do
  OCTO_GEMV_UNROLL=$u timeout 60 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584,512x3584 --dtypes q4_k,q6_k,q8_0,f16 --passes 20 --bandwidth-gbs 4800 | sed "s/^{/{\"unroll\":$u,\"round\":$r,/" >> $OUT/gemv.jsonl 2>>$OUT/log.txt
done; done
say gemv
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 40 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
ready 1.5b-q4_k_m
for m in 1.5b-q4_k_m; do
  run default $m X=1; run copies0 $m OCTO_WEIGHT_COPIES=0; run unroll2 $m OCTO_GEMV_UNROLL=2; run unroll4 $m OCTO_GEMV_UNROLL=4; run default $m X=1
done
say 1.5b
ready 7b-q4_k_m
m=7b-q4_k_m; run default $m X=1; run copies0 $m OCTO_WEIGHT_COPIES=0; run unroll2 $m OCTO_GEMV_UNROLL=2; run unroll4 $m OCTO_GEMV_UNROLL=4
say 7b-q4
ready 7b-q8_0
m=7b-q8_0; run default $m X=1; run copies0 $m OCTO_WEIGHT_COPIES=0; run unroll2 $m OCTO_GEMV_UNROLL=2
say 7b-q8
peer 7b-q8_0
say done
