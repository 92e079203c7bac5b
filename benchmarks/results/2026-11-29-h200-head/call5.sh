#!/usr/bin/env bash
# Device call 5 (main at 29f458a: the head's x rounded ahead, gate|up rows, keep-awake): (a) the rules
# change which workgroup computes an output, never a sum's order or x's rounding, so greedy tokens are
# identical: qwen_generate, 64 tokens, the default against the old rules forced back (OCTO_GEMV_X8=0 at
# 0.5B; OCTO_GEMV_NR_SWIGLU=4 at 0.5B and 1.5B Q8_0); (b) gpu_device and gpu_fused_decode on the card;
# (c) the closing table: 0.5B Q8_0, 1.5B Q8_0, 1.5B Q4_K_M, octo and the peer in this call.
# Run: bash benchmarks/results/2026-11-29-h200-head/call5.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-head
mkdir -p /tmp/head /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
for t in gpu_device gpu_fused_decode; do timeout 150 $B/$t > $OUT/$t.txt 2>&1; say "$t: exit $? $(grep 'assertions' $OUT/$t.txt)"; done
ids() {  # model env... -> the generated ids
  local m=$1; shift
  env "$@" timeout 60 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "Once upon a time there was a small robot who" -n 64 --ignore-eos --json 2>/dev/null | python3 -c "import sys,json
print(' '.join(str(json.loads(l)['id']) for l in sys.stdin if '\"id\"' in l))"
}
for m in 0.5b-q8_0 1.5b-q8_0; do ready $m
  a=$(ids $m); b=$(ids $m OCTO_GEMV_NR_SWIGLU=4); echo "$m default: $a" >> $OUT/ids.txt; echo "$m nr4: $b" >> $OUT/ids.txt
  say "$m ids default vs OCTO_GEMV_NR_SWIGLU=4: $([ -n "$a" ] && [ "$a" = "$b" ] && echo same || echo DIFFER) ($(echo $a | wc -w) ids)"
  if [ $m = 0.5b-q8_0 ]; then c=$(ids $m OCTO_GEMV_X8=0); echo "$m x8off: $c" >> $OUT/ids.txt
    say "$m ids default vs OCTO_GEMV_X8=0: $([ -n "$a" ] && [ "$a" = "$c" ] && echo same || echo DIFFER)"; fi
done
run() {
  timeout 120 $B/bench_decode --model $S/qwen2.5-$1.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt >> $OUT/decode.jsonl
  timeout 90 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "$1: octo $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ') peer $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m; do ready $m; run $m; done
say done
