#!/usr/bin/env bash
# Device call 4 (main at cff2e6c + merge-hybrid.diff): the register merge where a KV head has at most
# 2 batches of chunks (16 a batch at 0.5B's one output an invocation, 8 at two), each invocation's
# outputs' loads together; the shared-memory merge past that. OCTO_ATTENTION_MERGE=1 against =0,
# alternating; by context; greedy ids over a ~600-token prompt (flash-decoding's range) both ways; the
# attention conformance cases on the card with the new merge.
# Run: bash benchmarks/results/2026-11-29-h200-qkv/call4.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p19
mkdir -p /tmp/head; tar -xJf $C/head.tar.xz -C /tmp/head
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
OCTO_ATTENTION_MERGE=1 timeout 200 $B/gpu_conformance -tc="*decode steps of one recording*,*flash decode attention sized*" > $OUT/conformance.txt 2>&1
say "gpu_conformance (attention, merge 1): exit $? $(grep 'assertions' $OUT/conformance.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
at() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 150 $B/bench_decode --model $S/qwen2.5-$m.gguf --at-positions 1024,2048,4096 --decode-tokens 64 --ctx 4352 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/at.jsonl
  say "$m $l at: $(tail -3 $OUT/at.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
P=$(python3 -c "print(' '.join(['The quick brown fox jumps over the lazy dog near the river bank.'] * 45))")
ids() {  # model env... -> the generated ids
  local m=$1; shift
  env "$@" timeout 60 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "$P" -n 64 --ignore-eos --json 2>/dev/null | python3 -c "import sys,json
print(' '.join(str(json.loads(l)['id']) for l in sys.stdin if '\"id\"' in l))"
}
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do ready $m
  for r in 1 2 3; do
    run shared $m OCTO_ATTENTION_MERGE=0
    run reg $m OCTO_ATTENTION_MERGE=1
  done
  a=$(ids $m OCTO_ATTENTION_MERGE=0); b=$(ids $m OCTO_ATTENTION_MERGE=1); echo "$m shared: $a" >> $OUT/ids.txt; echo "$m reg: $b" >> $OUT/ids.txt
  say "$m ids shared vs reg: $([ -n "$a" ] && [ "$a" = "$b" ] && echo same || echo DIFFER) ($(echo $a | wc -w) ids)"
  [ $m = 7b-q4_k_m ] && continue
  at shared $m OCTO_ATTENTION_MERGE=0
  at reg $m OCTO_ATTENTION_MERGE=1
done
say done
