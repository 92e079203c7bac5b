#!/usr/bin/env bash
# Device call 1 (fifth session): where decode time goes at 1.5B / 7B, and the GEMV kernels' bandwidth
# on the decode shapes, before any change. Run from the repository root on the GPU machine.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $OUT/env.txt
say gemv
SIZES=3584x3584,512x3584,37888x3584,3584x18944,1536x1536,256x1536,17920x1536,1536x8960,896x896,9728x896,896x4864
$B/bench_gemv_bandwidth --bandwidth-gbs 3071 --sizes $SIZES --dtypes f16,q8_0,q4_k,q6_k --passes 50 > $OUT/gemv.jsonl 2>>$OUT/log.txt
say models
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench >> $OUT/log.txt 2>&1
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,f16 --scratch $S --bin $B --keep --no-bench >> $OUT/log.txt 2>&1
ls -la $S >> $OUT/log.txt
for m in 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0 7b-f16; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $f"; continue; }
  say "bench $m"
  $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 --name "$m" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  say "profile $m"
  $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 16 --repeat 1 --profile --name "$m" > $OUT/profile-$m.txt 2>&1
done
say sweep
for nr in 2 4 8; do for wg in 64 128 256; do
  OCTO_GEMV_NR=$nr OCTO_GEMV_WG=$wg $B/bench_gemv_bandwidth --bandwidth-gbs 3071 --sizes 3584x3584,37888x3584,3584x18944 \
    --dtypes f16,q8_0,q4_k --passes 30 --chain-mib 256 2>>$OUT/log.txt | sed "s/^{/{\"nr\":$nr,\"wg\":$wg,/" >> $OUT/sweep.jsonl
done; done
say done
