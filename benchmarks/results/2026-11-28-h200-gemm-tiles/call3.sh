#!/usr/bin/env bash
# Device call 3: why the streamed 7B F16 prefill (2048 tokens) takes ~345 ms against 271 resident,
# whatever the ring depth and the resident layers (call2): the chain of per-layer programs with every
# layer resident (--resident-layers 28), and per-opcode GPU times of the whole and the chained prefill
# (bench_stream --profile).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16 --scratch $S --bin $B --keep --no-bench > $OUT/models-log.txt 2>&1
f=$S/qwen2.5-7b-f16.gguf
say models
timeout 150 $B/bench_stream --model $f --vram-budget 60GiB --resident-layers 28 --prompt-tokens 2048 --decode-tokens 2 --no-baseline --name "chain all resident 2048" >> $OUT/stream.jsonl 2>>$OUT/log.txt
say "chain resident"
timeout 150 $B/bench_stream --model $f --vram-budget 60GiB --resident-layers 28 --prompt-tokens 512 --decode-tokens 2 --no-baseline --name "chain all resident 512" >> $OUT/stream.jsonl 2>>$OUT/log.txt
say "chain resident 512"
timeout 250 $B/bench_stream --model $f --vram-budget 4GiB --prompt-tokens 2048 --decode-tokens 2 --profile --name "4GiB profile" >> $OUT/stream.jsonl 2>>$OUT/log.txt
say "profile"
say done
