#!/usr/bin/env bash
# Device call 2 (the thirty-third session's work with the attention forms' key tiles sized so that an
# invocation holds at most 8 16-byte units of K and of V, and the split default for head_dim <= 64):
# the prefill attention's conformance again (every form, now with tiles of 16 too), the attention sweep
# (bench_decode --profile) on the three shapes, pp512 / tg128 of the default against
# OCTO_PREFILL_FUSION=norms (the previous default) and the unsplit attention (OCTO_ATTENTION_ROWS=64
# OCTO_ATTENTION_SPLIT=1), alternating, two rounds, then the 7B Q8_0 if time allows; the peer
# (llama.cpp 3f545bec, llama-bench -p 512 -n 128 -r 2 -fa 1 -ngl 99) after a warm-up run.
# Run: bash benchmarks/results/2026-12-06-h100-attn-split/call2.sh   (carry .carry-s33, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s33
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $OUT/log.txt 2>&1
if [ ! -x /tmp/peer-bin/llama-bench ]; then
  ( JOBS=10 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
fi
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench; }
( [ -f $S/qwen3-0.6b-q8_0.gguf ] || mk qwen3-0.6b q8_0; [ -f $S/qwen2.5-0.5b-q8_0.gguf ] || mk 0.5b q8_0; [ -f $S/qwen2.5-1.5b-q8_0.gguf ] || mk 1.5b q8_0 ) > $OUT/models-log.txt 2>&1 &
models=$!
conf() {  # binary [doctest filter]
  local t=$1; shift
  echo "=== $t $*" >> $OUT/conf.txt
  timeout 240 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"
}
conf gpu_conformance -tc="*prefill ATTENTION_TILE*"
wait $models; say "models made"; ls -la $S/*.gguf >> $OUT/log.txt
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
  for f in 64:1 32:2 16:4 32:4 16:2 16:1; do
    OCTO_ATTENTION_ROWS=${f%:*} OCTO_ATTENTION_SPLIT=${f#*:} timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 8 --profile > /tmp/prof.txt 2>&1
    a=$(grep '"profile_opcode","phase":"prefill","opcode":"ATTENTION_TILE"' /tmp/prof.txt | grep -o '"us":[0-9.]*')
    g=$(grep '"profile","phase":"prefill"' /tmp/prof.txt | grep -o '"gpu_us":[0-9.]*')
    echo "$m rows:split=$f attention $a prefill $g" >> $OUT/attn-sweep.txt
  done
  say "$m swept: $(grep $m $OUT/attn-sweep.txt | sed 's/.*split=//' | tr '\n' ';')"
done
run() {  # label model env...
  local l=$1 m=$2; shift 2
  [ -f $S/$m.gguf ] || { say "no $m"; return; }
  env "$@" timeout 90 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do
  for r in 1 2; do run def $m; run norms $m OCTO_PREFILL_FUSION=norms; run r64s1 $m OCTO_ATTENTION_ROWS=64 OCTO_ATTENTION_SPLIT=1; done
done
n=0; while [ ! -x /tmp/peer-bin/llama-bench ] && ! grep -q "peer build exit" /tmp/peer-build.log 2>/dev/null && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done
peer() {
  [ -x /tmp/peer-bin/llama-bench ] || { [ -f /tmp/peer-out/peer.tar.xz ] && mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin; }
  [ -x /tmp/peer-bin/llama-bench ] || { say "no peer"; return; }
  timeout 90 /tmp/peer-bin/llama-bench -m $S/$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), d["samples_ts"], end="; ")')"
}
peer qwen2.5-0.5b-q8_0  # warm-up (the first run in call 1 varied 5.0-7.2k)
for m in qwen3-0.6b-q8_0 qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0; do peer $m; done
if [ $(( $(date +%s) - T0 )) -lt 300 ]; then
  rm -f $S/qwen2.5-0.5b-* $S/qwen2.5-1.5b-* $S/qwen3-*
  mk 7b q8_0 >> $OUT/models-log.txt 2>&1; say "7b made"
  for r in 1 2; do run def qwen2.5-7b-q8_0; run norms qwen2.5-7b-q8_0 OCTO_PREFILL_FUSION=norms; done
  peer qwen2.5-7b-q8_0
fi
say done
