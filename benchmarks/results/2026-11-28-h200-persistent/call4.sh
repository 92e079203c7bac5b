#!/usr/bin/env bash
# Device call 4 (ninth session, H200): the decode GEMV chunk loops with fewer integer instructions
# (nib8: one shift for a word's 8 nibbles; K-quant and Q6_K scales to floats without int -> float
# conversions) against the tree before (`base`: bench_decode_base, and bench_gemv_probe at
# OCTO_GEMV_PROBE=0, both 7a32083's kernels), alternating, one process per case; llama.cpp 3f545bec
# (carried as peer.tar.xz, built in call2) on the same files.
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz && mkdir -p /tmp/peer-bin && tar -xJf peer.tar.xz -C /tmp/peer-bin)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
for rep in 1 2; do
  for c in q4_k:18944x3584 q4_k:3584x18944 q4_k:3584x3584 q6_k:152064x3584 q6_k:3584x18944 q4_0:18944x3584; do
    dt=${c%%:*}; sz=${c#*:}
    for v in base new; do
      if [ $v = base ]; then bin="env OCTO_GEMV_PROBE=0 $B/bench_gemv_probe"; else bin=$B/bench_gemv_bandwidth; fi
      echo "{\"label\":\"$v\",\"dtype\":\"$dt\",\"size\":\"$sz\"}" >> $OUT/gemv.jsonl
      timeout 30 $bin --dtypes $dt --sizes $sz --passes 30 --chain-mib 256 --bandwidth-gbs 4800 2>>$OUT/log.txt | grep gemv_bandwidth >> $OUT/gemv.jsonl
    done
  done
done
say gemv
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 1.5b-q4_k_m 7b-q4_k_m; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for r in 1 2; do
    timeout 120 $B/bench_decode_base $d --name "$m base" >> $OUT/decode.jsonl 2>>$OUT/log.txt
    timeout 120 $B/bench_decode $d --name "$m new" >> $OUT/decode.jsonl 2>>$OUT/log.txt
  done
  say "$m"
done
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 1.5b-q4_k_m 7b-q4_k_m; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  timeout 120 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
