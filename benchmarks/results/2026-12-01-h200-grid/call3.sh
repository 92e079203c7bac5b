#!/usr/bin/env bash
# Device call 3 (main at b012547 + decode attention's long form past 8192 keys as landed: 64 chunks a KV
# head at most, pipelined passes, merges of 16 chunks a round trip; uncommitted then). On the card: the
# attention conformance (the long-form rows included); bench_attention default against
# OCTO_ATTENTION_LONG=0; bench_decode --at-positions (one recording, 1k-32k keys) default against
# OCTO_ATTENTION_LONG=0 alternating, and at a 512-token prompt; the peer (llama.cpp 3f545bec, built here) on the same
# files: llama-bench -p 512 -n 128 and -p 0 -n 128 -d 16384.
# Run: bash benchmarks/results/2026-12-01-h200-grid/call3.sh   (carry .carry-s22, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s22
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=/tmp/head/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( JOBS=8 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 90 $B/gpu_conformance -tc='*decode steps of one recording*,*flash decode attention sized*' > $OUT/conformance.txt 2>&1
say "gpu_conformance attention: exit $? $(grep 'assertions' $OUT/conformance.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
ready 7b-q4_k_m; say "models ready"
for v in "" "OCTO_ATTENTION_LONG=0"; do
  env $v timeout 60 $B/bench_attention --shapes 14x2x64,12x2x128,28x4x128 --ctx 8192,16384,32768 --kv-types f16 \
    --passes 30 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$v\",/" >> $OUT/attention.jsonl
  say "attention [$v]: $(grep "\"v\":\"$v\"" $OUT/attention.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(str(d["heads"])+"x"+str(d["head_dim"]), d["ctx"], round(d.get("us_per_layer",0),2), round(d.get("ratio_to_kv_read",0),2), end="; ")')"
done
run() {  # label model prompt env...
  local l=$1 m=$2 p=$3; shift 3
  env "$@" timeout 100 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens $p --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",\"p\":$p,/" >> $OUT/decode.jsonl
  say "$m p$p $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
at() {  # label model positions env...
  local l=$1 m=$2 ps=$3; shift 3
  env "$@" timeout 150 $B/bench_decode --model $S/qwen2.5-$m.gguf --at-positions $ps --decode-tokens 128 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l at $ps: $(grep "\"v\":\"$l\"" $OUT/decode.jsonl | grep decode_at | grep "qwen2.5-$m" | tail -4 | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["position"], round(d["decode_tok_s"],1), end="; ")')"
}
for m in 0.5b-q8_0 1.5b-q8_0; do
  run default $m 512
  for r in 1 2; do at default $m 1024,8192,16384,32000; at long0 $m 1024,8192,16384,32000 OCTO_ATTENTION_LONG=0; done
done
run default 7b-q4_k_m 512
at default 7b-q4_k_m 1024,16384; at long0 7b-q4_k_m 1024,16384 OCTO_ATTENTION_LONG=0
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 30 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
if [ -f /tmp/peer-out/peer.tar.xz ]; then
  cp /tmp/peer-out/peer.tar.xz /tmp/peer-out/peer.json $OUT/
  mkdir -p /tmp/peer-bin; tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do
    timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    timeout 80 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 0 -n 128 -d 16384 -r 1 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -3 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], d.get("n_depth",0), round(d["avg_ts"],1), end="; ")')"
  done
fi
say done
