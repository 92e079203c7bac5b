#!/usr/bin/env bash
# Device call 5 (main at cff2e6c + wg256.diff; what landed adds call6's switch back to 128 past 8192 keys): flash-decoding with one output an
# invocation everywhere: 256-invocation workgroups where a KV head's group has more than 128 four-dim
# outputs (1.5B, 7B), and those merge in registers as the 0.5B's 128 do. Against OCTO_ATTENTION_WG=128
# (the previous kernel exactly at 1.5B / 7B), alternating; by context; the attention conformance cases
# on the card; the peer (llama.cpp 3f545bec) on the same files in the same call.
# Run: bash benchmarks/results/2026-11-29-h200-qkv/call5.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p19
mkdir -p /tmp/head /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 $B/gpu_conformance -tc="*decode steps of one recording*,*flash decode attention sized*" > $OUT/conformance.txt 2>&1
say "gpu_conformance (attention): exit $? $(grep 'assertions' $OUT/conformance.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
at() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 150 $B/bench_decode --model $S/qwen2.5-$m.gguf --at-positions 1024,4096,16384 --decode-tokens 64 --ctx 16640 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/at.jsonl
  say "$m $l at: $(tail -3 $OUT/at.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
peer() {
  timeout 120 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do ready $m
  for r in 1 2 3; do
    run head $m
    [ $m = 0.5b-q8_0 ] || run wg128 $m OCTO_ATTENTION_WG=128
  done
  peer $m
  [ $m = 1.5b-q8_0 ] || continue
  at head $m
  at wg128 $m OCTO_ATTENTION_WG=128
done
say done
