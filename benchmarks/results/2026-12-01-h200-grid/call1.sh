#!/usr/bin/env bash
# Device call 1 (main at b012547 + the GEMV grid-stride loop and its OCTO_GEMV_GROUPS cap, and the
# attention register merge's batch as a spec constant, OCTO_ATTENTION_MERGE_BATCH; uncommitted then).
# The peer (llama.cpp 3f545bec) built from its pack in the background; models made meanwhile.
# bench_gemv_bandwidth with and without the cap; bench_attention with merge batches 8 and 16;
# bench_decode default against the caps and merge batch 16, alternating; the peer on the same files.
# Run: bash benchmarks/results/2026-12-01-h200-grid/call1.sh   (carry .carry-s22, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s22
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=/tmp/head/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( sleep 20; JOBS=12 PEER_OUT=$OUT/peer bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv > $OUT/gpu.txt 2>&1
timeout 30 $B/bench_gemv_bandwidth --sizes 37888x3584 --dtypes q8_0 --passes 10 --bandwidth-gbs 4800 > /dev/null 2>&1  # warm-up
for g in "" 1056 2112 528 4224; do
  OCTO_GEMV_GROUPS=$g timeout 90 $B/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,152064x3584,17920x1536,9728x896 \
    --dtypes q8_0,q4_k,q6_k,f16 --passes 20 --chain-mib 256 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"groups\":\"$g\",/" >> $OUT/gemv.jsonl
  say "gemv groups='$g': $(grep "\"groups\":\"$g\"" $OUT/gemv.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l)
  if d.get("tasks",1)>1: print(d["dtype"], str(d["N"])+"x"+str(d["K"]), round(d["fraction_of_bound"],2), end="; ")')"
done
for mb in 8 16; do
  OCTO_ATTENTION_MERGE_BATCH=$mb timeout 90 $B/bench_attention --shapes 14x2x64,12x2x128,28x4x128 --ctx 640,1024,4096,16384 --kv-types f16 \
    --passes 30 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"mb\":$mb,/" >> $OUT/attention.jsonl
  say "attention mb=$mb: $(grep "\"mb\":$mb" $OUT/attention.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(str(d["heads"])+"x"+str(d["kv_heads"])+"x"+str(d["head_dim"]), d["ctx"], round(d.get("us_per_layer",0),2), end="; ")')"
done
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 100 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in 0.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m 1.5b-q8_0; do ready $m
  for r in 1 2; do
    run base $m
    run g1056 $m OCTO_GEMV_GROUPS=1056
    run g2112 $m OCTO_GEMV_GROUPS=2112
    run mb16 $m OCTO_ATTENTION_MERGE_BATCH=16
  done
  [ $(( $(date +%s) - T0 )) -gt 470 ] && { say "time: stopping decode runs"; break; }
done
tail -3 /tmp/peer-build.log >> $OUT/log.txt; cp /tmp/peer-build.log $OUT/peer-build.log 2>/dev/null
if [ -f $OUT/peer/peer.tar.xz ]; then
  mkdir -p /tmp/peer-bin; tar -xJf $OUT/peer/peer.tar.xz -C /tmp/peer-bin
  for m in 0.5b-q8_0 7b-q4_k_m; do
    [ $(( $(date +%s) - T0 )) -gt 540 ] && break
    timeout 40 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  done
fi
say done
