#!/usr/bin/env bash
# Device call 9 (main at b4b06bd: X16 and the three-stage loop as landed): pp512 and decode of the 7B
# F16 and the 1.5B Q4_K_M, with the peer (llama.cpp 3f545bec) on the same files in the same call.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call9.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p21
mkdir -p /tmp/head /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types f16 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # model
  timeout 120 $B/bench_decode --model $S/qwen2.5-$1.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt >> $OUT/decode.jsonl
  say "$1: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
peer() {
  timeout 120 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in 1.5b-q4_k_m 7b-f16; do ready $m; run $m; run $m; peer $m; done
say done
