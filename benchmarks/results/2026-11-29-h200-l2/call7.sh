#!/usr/bin/env bash
# Device call 7: flash-decoding attention with its first pass's K / V loads issued beside the position's
# (not after it) and the merge's partial sums loaded with its weights (.carry-l2/attn.tar.xz) against
# call4's rule binary (the same tree before that change), alternating twice: 0.5B and 1.5B Q8_0 at a
# 512-token prompt, and 0.5B at positions 1k / 4k / 16k (the guess holds up to MAX_CHUNKS * 64 keys).
# The attention conformance cases on the card first.
# Run: bash benchmarks/results/2026-11-29-h200-l2/call7.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/next /tmp/rule /tmp/attn; tar -xJf $C/next.tar.xz -C /tmp/next; tar -xJf $C/rule.tar.xz -C /tmp/rule; tar -xJf $C/attn.tar.xz -C /tmp/attn
B=/tmp/next/bin; R=/tmp/rule/bin; A=/tmp/attn/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 100 $A/gpu_conformance -tc='conformance: decode steps*,conformance: flash decode*,conformance: ATTENTION_TILE*' > $OUT/tests.txt 2>&1; echo "rc=$?" >> $OUT/tests.txt
say "tests: $(grep -E 'test cases|rc=' $OUT/tests.txt | tr '\n' ' ')"
grep -B2 -A8 "ERROR" $OUT/tests.txt | head -60 > $OUT/test-errors.txt; rm -f $OUT/tests.txt
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label bin model
  timeout 120 $2/bench_decode --model $S/qwen2.5-$3.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$1\",/" >> $OUT/decode.jsonl
}
show() { grep "qwen2.5-$1" $OUT/decode.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["v"], round(d["decode_tok_s"],1), end="; ")'; }
for m in 0.5b-q8_0 1.5b-q8_0; do ready $m
  for r in 1 2; do run rule $R $m; run attn $A $m; done
  say "decode $m: $(show $m)"
done
for b in rule attn; do d=$R; [ $b = attn ] && d=$A
  timeout 100 $d/bench_decode --model $S/qwen2.5-0.5b-q8_0.gguf --ctx 32768 --at-positions 1024,4096,16384 --decode-tokens 32 --repeat 1 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$b\",/" >> $OUT/positions.jsonl
done
say "positions: $(python3 -c '
import json
for l in open("'$OUT'/positions.jsonl"):
  d=json.loads(l); print(d["v"], d.get("position", d.get("at_position")), round(d["decode_tok_s"],1), end="; ")' 2>&1 | head -c 600)"
say done
