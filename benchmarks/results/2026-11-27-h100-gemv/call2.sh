#!/usr/bin/env bash
# Device call 2: the GEMV's loads per step (gemv.comp U, OCTO_GEMV_U) against rows per workgroup
# (OCTO_GEMV_NR) and workgroup width (OCTO_GEMV_WG): standalone bandwidth on the decode shapes, then
# decode tok/s of whole models under each U.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
say models
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m,f16 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
say sweep
SIZES=896x896,4864x896,896x4864,1536x1536,256x1536,8960x1536,1536x8960,3584x3584,512x3584,18944x3584,3584x18944
for u in 1 2 4; do for nr in 2 4 8; do for wg in 64 128 256; do
  OCTO_GEMV_U=$u OCTO_GEMV_NR=$nr OCTO_GEMV_WG=$wg $B/bench_gemv_bandwidth --bandwidth-gbs 3071 --sizes $SIZES \
    --dtypes f16,q8_0,q4_k,q6_k --passes 20 --chain-mib 128 2>>$OUT/log.txt | grep '"tasks":[0-9][0-9]' | sed "s/^{/{\"u\":$u,\"nr\":$nr,\"wg\":$wg,/" >> $OUT/sweep.jsonl
done; done; say "sweep u=$u"; done
wait
say decode
for r in 1 2; do for m in 1.5b-q8_0 1.5b-q4_k_m 1.5b-f16 0.5b-q8_0 7b-q8_0; do for u in 1 2 4; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] || continue
  OCTO_GEMV_U=$u $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 1 --name "$m u$u" >> $OUT/decode.jsonl 2>>$OUT/log.txt
done; done; say "decode round $r"; done
say done
