#!/usr/bin/env bash
# Device call 4: the chained programs' kernels ran ~40% slower than the whole program's (call3's
# profile), every opcode alike. The engine's regions (the chain's activations) are dedicated
# allocations shared CONCURRENT with the transfer queue; the VM's own pools are EXCLUSIVE blocks of
# 256 MiB. A/B on the 1.5B F16 model, every layer resident, 2048 tokens: OCTO_REGION_EXCLUSIVE=1 (every
# region but the slots exclusive to the compute family), OCTO_REGION_ALIGN_MB=2 (sizes rounded up to 2 MiB).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types f16 --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
f=$S/qwen2.5-1.5b-f16.gguf
say models
timeout 100 $B/bench_decode --model $f --prompt-tokens 2048 --decode-tokens 2 --name whole >> $OUT/decode.jsonl 2>>$OUT/log.txt
for v in "0 4" "1 4" "0 2" "1 2" "0 4"; do
  set -- $v
  export OCTO_REGION_EXCLUSIVE=$1 OCTO_REGION_ALIGN_MB=$(( $2 == 4 ? 0 : $2 ))
  [ $2 = 4 ] && unset OCTO_REGION_ALIGN_MB
  timeout 100 $B/bench_stream --model $f --vram-budget 60GiB --resident-layers 28 --prompt-tokens 2048 --decode-tokens 2 --no-baseline --name "exclusive=$1 align=$2" >> $OUT/stream.jsonl 2>>$OUT/log.txt
  say "chain $v"
done
say done
