#!/usr/bin/env bash
# Device call 1 (tenth session, H200): gemm_coopf's subgroup tiling swept over the 1.5B / 7B shapes at
# 512 rows (bench_gemm, OCTO_GEMM_COOP=wg,wm,fm,fn; F16 and Q4_K, which runs weights_f16 + the F16
# kernel), then the 7B F16 model: bench_decode pp512 + decode, llama.cpp 3f545bec on the same file, a
# per-task prefill profile, and bench_stream under a 4 GiB budget with a 2048-token prompt.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
for cfg in auto 128,2,4,8 128,1,8,4 256,4,2,8 128,4,2,8 128,2,2,8 64,1,4,8; do
  if [ $cfg = auto ]; then unset OCTO_GEMM_COOP; else export OCTO_GEMM_COOP=$cfg; fi
  timeout 60 $B/bench_gemm --models 1.5b,7b --tokens 512 --dtypes f16,q4_k --kernels auto --passes 10 \
    | sed "s/^{/{\"cfg\":\"$cfg\",/" >> $OUT/gemm.jsonl 2>>$OUT/log.txt
  say "gemm $cfg"
done
unset OCTO_GEMM_COOP
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
m=7b-f16; ready $m; f=$S/qwen2.5-$m.gguf
if [ -f $f ]; then
  for r in 1 2; do timeout 120 $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2 --name "$m" >> $OUT/decode.jsonl 2>>$OUT/log.txt; done
  say decode
  timeout 120 $B/bench_decode --model $f --prompt-tokens 512 --decode-tokens 16 --profile > $OUT/profile-$m.txt 2>>$OUT/log.txt
  say profile
  LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
  timeout 150 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say peer
  timeout 200 $B/bench_stream --model $f --vram-budget 4GiB --prompt-tokens 2048 --decode-tokens 8 --repeat 2 > $OUT/stream.json 2>>$OUT/log.txt
  say stream
else say "no $m"; tail -5 $OUT/models-log.txt; fi
say done
