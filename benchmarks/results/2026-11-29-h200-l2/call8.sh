#!/usr/bin/env bash
# Device call 8: main's head (.carry-l2/final.tar.xz) beside the peer, llama.cpp 3f545bec built here
# (tools/build_peer.sh from github:ngxson/llama.cpp; .carry-l2/peer/peer.tar.xz), on the same files in
# the same call: 0.5B Q8_0, 1.5B Q8_0 and 1.5B Q4_K_M. octo: bench_decode --prompt-tokens 512
# --decode-tokens 128 --repeat 2; peer: llama-bench -p 512 -n 128 -r 2 -fa 1.
# Run: bash benchmarks/results/2026-11-29-h200-l2/call8.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/final /tmp/peer-bin; tar -xJf $C/final.tar.xz -C /tmp/final; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/final/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m; do ready $m
  timeout 60 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt >> $OUT/decode.jsonl
  timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "$m: octo $(tail -1 $OUT/decode.jsonl | python3 -c 'import sys,json; d=json.loads(sys.stdin.read()); print(round(d["prefill_tok_s"]), round(d["decode_tok_s"],1))') peer $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
done
say done
