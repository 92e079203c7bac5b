#!/usr/bin/env bash
# Device call 3 (main at cff2e6c + merge-reg.diff, not landed): flash-decoding's last workgroup merging
# its chunks in registers (OCTO_ATTENTION_MERGE=1: each output's m, l and partial sums of a batch of 8
# chunks loaded together, an online rescale between batches, no shared memory or barrier) against the
# shared-memory merge (=0), alternating in the same call; then by context at 0.5B / 1.5B.
# Run: bash benchmarks/results/2026-11-29-h200-qkv/call3.sh
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
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
at() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 150 $B/bench_decode --model $S/qwen2.5-$m.gguf --at-positions 1024,4096,16384 --decode-tokens 64 --ctx 16640 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/at.jsonl
  say "$m $l at: $(tail -3 $OUT/at.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do ready $m
  for r in 1 2 3; do
    run shared $m OCTO_ATTENTION_MERGE=0
    run reg $m OCTO_ATTENTION_MERGE=1
  done
  [ $m = 7b-q4_k_m ] && continue
  at shared $m OCTO_ATTENTION_MERGE=0
  at reg $m OCTO_ATTENTION_MERGE=1
done
say done
