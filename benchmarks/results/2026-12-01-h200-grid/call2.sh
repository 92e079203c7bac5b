#!/usr/bin/env bash
# Device call 2 (main at b012547 + decode attention's merge batch (OCTO_ATTENTION_MERGE_BATCH) for both
# merges and pipelined passes (OCTO_ATTENTION_PIPE=1), uncommitted then). Models are made with torch on
# the CPU (CUDA_VISIBLE_DEVICES empty), so nothing else runs on the GPU while it is timed (in call 1 the
# checkpoints were drawn on the GPU beside the benchmarks). On the card: the attention conformance with
# the new spec constants; bench_attention over the variants, two rounds; bench_decode at 512 and 4096
# prompt tokens, base against the variants, alternating; the peer (built here) on the same files.
# Run: bash benchmarks/results/2026-12-01-h200-grid/call2.sh   (carry .carry-s22, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s22
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=/tmp/head/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( export CUDA_VISIBLE_DEVICES=
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
( JOBS=6 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
for v in "" "OCTO_ATTENTION_PIPE=1 OCTO_ATTENTION_MERGE_BATCH=16"; do
  env $v timeout 60 $B/gpu_conformance -tc='*decode steps of one recording*,*flash decode attention sized*' > $OUT/conformance.txt 2>&1
  say "gpu_conformance attention [$v]: exit $? $(grep 'assertions' $OUT/conformance.txt)"
done
att() {  # label env...
  local l=$1; shift
  env "$@" timeout 90 $B/bench_attention --shapes 14x2x64,12x2x128,28x4x128 --ctx 1024,4096,16384,32768 --kv-types f16 \
    --passes 30 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/attention.jsonl
  say "attention $l: $(grep "\"v\":\"$l\"" $OUT/attention.jsonl | tail -12 | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(str(d["heads"])+"x"+str(d["head_dim"]), d["ctx"], round(d.get("us_per_layer",0),2), end="; ")')"
}
for r in 1 2; do
  att base
  att mb16 OCTO_ATTENTION_MERGE_BATCH=16
  att pipe OCTO_ATTENTION_PIPE=1
  att both OCTO_ATTENTION_PIPE=1 OCTO_ATTENTION_MERGE_BATCH=16
  att c32 OCTO_ATTENTION_PIPE=1 OCTO_ATTENTION_MERGE_BATCH=16 OCTO_ATTENTION_CHUNKS=32
  att c64 OCTO_ATTENTION_PIPE=1 OCTO_ATTENTION_MERGE_BATCH=16 OCTO_ATTENTION_CHUNKS=64
done
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model prompt env...
  local l=$1 m=$2 p=$3; shift 3
  env "$@" timeout 100 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens $p --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"p\":$p,/" >> $OUT/decode.jsonl
  say "$m p$p $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do ready $m
  for p in 512 4096; do
    for r in 1 2; do
      run base $m $p
      run both $m $p OCTO_ATTENTION_PIPE=1 OCTO_ATTENTION_MERGE_BATCH=16
      run c32 $m $p OCTO_ATTENTION_PIPE=1 OCTO_ATTENTION_MERGE_BATCH=16 OCTO_ATTENTION_CHUNKS=32
    done
  done
  [ $(( $(date +%s) - T0 )) -gt 480 ] && { say "time: stopping decode runs"; break; }
done
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 20 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
if [ -f /tmp/peer-out/peer.tar.xz ]; then
  cp /tmp/peer-out/peer.tar.xz $OUT/peer.tar.xz
  mkdir -p /tmp/peer-bin; tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do
    [ $(( $(date +%s) - T0 )) -gt 560 ] && break
    timeout 40 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  done
fi
say done
