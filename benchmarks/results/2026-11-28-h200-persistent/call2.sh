#!/usr/bin/env bash
# Device call 2 (ninth session, H200): the baseline on this machine, octo at 7a32083 beside llama.cpp
# 3f545bec (built here from .carry-gemm/peer-src.tar.xz, tools/build_peer.sh) on the same files, and a
# sweep of the decode GEMV's workgroup width / rows per workgroup (OCTO_GEMV_WG, OCTO_GEMV_NR) on the
# Q4_K 7B shapes and the Q6_K LM head, one process per case (bench_gemv_bandwidth).
set -u
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
(cd .carry-gemm && tar -xJf bin.tar.xz)
B=$PWD/.carry-gemm/bin; T=$PWD/.carry-gemm/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T)] $*" | tee -a $OUT/log.txt; }
$B/octo_devices --boot > $OUT/env.txt 2>&1
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( PEER_OUT=/tmp/peer-pack bash tools/build_peer.sh --from-pack .carry-gemm/peer-src.tar.xz > /tmp/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt
  tail -5 /tmp/peer-build.txt >> $OUT/log.txt
  mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin && cp /tmp/peer-pack/peer.tar.xz $OUT/ ) &
for dt in q4_k q6_k; do
  sizes="18944x3584,3584x18944,3584x3584"; [ $dt = q6_k ] && sizes="152064x3584"
  for sz in ${sizes//,/ }; do
    for cfg in "" "OCTO_GEMV_WG=64" "OCTO_GEMV_WG=128" "OCTO_GEMV_WG=256" "OCTO_GEMV_NR=2" "OCTO_GEMV_NR=8" "OCTO_GEMV_WG=128 OCTO_GEMV_NR=8"; do
      echo "{\"cfg\":\"$cfg\",\"dtype\":\"$dt\",\"size\":\"$sz\"}" >> $OUT/gemv.jsonl
      env $cfg timeout 30 $B/bench_gemv_bandwidth --dtypes $dt --sizes $sz --passes 30 --chain-mib 256 --bandwidth-gbs 4800 >> $OUT/gemv.jsonl 2>>$OUT/log.txt
    done
  done
done
say gemv
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do
  ready $m; f=$S/qwen2.5-$m.gguf; [ -f $f ] || { say "no $m"; continue; }
  d="--model $f --prompt-tokens 512 --decode-tokens 128 --repeat 2"
  for r in 1 2; do timeout 120 $B/bench_decode $d --name "$m base" >> $OUT/decode.jsonl 2>>$OUT/log.txt; done
  say "$m"
done
wait
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in 0.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do
  f=$S/qwen2.5-$m.gguf; [ -f $f ] && [ -n "$LB" ] || continue
  timeout 120 $LB -m $f -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m"
done
say done
