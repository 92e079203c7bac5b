#!/usr/bin/env bash
# Device call 5: F16 decode GEMVs at 2 rows a workgroup (OCTO_GEMV_NR=2) against the rule's 4, on
# 0.5B and 7B F16 (call4 measured 1.5B F16: 543 against 490 tok/s), with the peer on the same files.
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,7b --types f16 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
peer() { f=$S/qwen2.5-$1.gguf; [ -f $f ] && [ -n "$LB" ] || return; timeout 60 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt; say "peer $1"; }
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"model\":\"$m\",/" >> $OUT/decode.jsonl
}
for m in 0.5b-f16 7b-f16; do
  ready $m
  for r in 1 2; do run default $m X=1; run nr2 $m OCTO_GEMV_NR=2; done
  peer $m
done
say done
