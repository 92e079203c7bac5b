#!/usr/bin/env bash
# Device call 6 (eighth session): does the barrier's form matter? The tree after the in-kernel waits'
# revert plus an uncommitted knob, OCTO_EXPERIMENT_BARRIER: "" (the recorder's barrier: legacy
# vkCmdPipelineBarrier, shader write -> shader read|write), "sync2" (vkCmdPipelineBarrier2, storage
# write -> storage read|write), "exec" (an execution dependency only: no memory barrier; a measurement,
# not a correct program).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for v in legacy sync2 exec legacy sync2 exec; do
    OCTO_EXPERIMENT_BARRIER=$v timeout 120 $B/bench_decode $d --name "$m $v" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
wait
say done
