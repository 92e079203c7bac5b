#!/usr/bin/env bash
# Device call 5: the chained prefill's kernels all ran slower than the whole program's (call3, call4:
# 1.5B F16 at 2048 tokens, 95 ms against 75.6, the regions' sharing mode and size alignment changed
# nothing). Clocks and power sampled by nvidia-smi while chain and whole alternate (chain first).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T.%N)] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types f16 --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
f=$S/qwen2.5-1.5b-f16.gguf
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
for r in 1 2; do
  say "chain start"
  timeout 100 $B/bench_stream --model $f --vram-budget 60GiB --resident-layers 28 --prompt-tokens 2048 --decode-tokens 2 --repeat 4 --no-baseline --name "chain $r" >> $OUT/stream.jsonl 2>>$OUT/log.txt
  say "chain end"
  say "whole start"
  timeout 100 $B/bench_decode --model $f --prompt-tokens 2048 --decode-tokens 2 --repeat 4 --name "whole $r" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  say "whole end"
done
timeout 100 $B/bench_stream --model $f --vram-budget 60GiB --resident-layers 28 --prompt-tokens 2048 --decode-tokens 2 --repeat 1 --profile --name "profile" >> $OUT/stream.jsonl 2>>$OUT/log.txt
kill $SMI
say done
