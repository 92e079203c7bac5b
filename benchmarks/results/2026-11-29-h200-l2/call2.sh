#!/usr/bin/env bash
# Device call 2: (a) the Q8_0 integer-dot GEMV's quants read as one aligned 16-byte load (probe build,
# probe-q8-aligned.diff: wrong results, timing only; OCTO_GEMV_PROBE=3) against head, alternating twice,
# on 7B, 1.5B and 0.5B Q8_0, with x rounded ahead on (the default) -- does a repacked Q8_0 layout still
# pay? (b) bench_decode --profile on 0.5B and 1.5B Q8_0; (c) rows and width per workgroup forced on 0.5B.
# Run: bash benchmarks/results/2026-11-29-h200-l2/call2.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-l2
mkdir -p /tmp/head /tmp/probe; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/probe.tar.xz -C /tmp/probe
B=/tmp/head/bin; P=/tmp/probe/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 120 $b/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
}
show() { grep "qwen2.5-$1" $OUT/decode.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["v"], round(d["decode_tok_s"],1), end="; ")'; }
ready 0.5b-q8_0
timeout 60 $B/bench_decode --model $S/qwen2.5-0.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-0.5b.txt 2>&1
for r in 1 2; do run head $B 0.5b-q8_0; run probe3 $P 0.5b-q8_0 OCTO_GEMV_PROBE=3; done
for e in OCTO_GEMV_NR=1 OCTO_GEMV_NR=4 OCTO_GEMV_WG=32 OCTO_GEMV_WG=128; do run "$e" $B 0.5b-q8_0 $e; done
say "0.5b: $(show 0.5b-q8_0)"
ready 1.5b-q8_0
timeout 60 $B/bench_decode --model $S/qwen2.5-1.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-1.5b.txt 2>&1
for r in 1 2; do run head $B 1.5b-q8_0; run probe3 $P 1.5b-q8_0 OCTO_GEMV_PROBE=3; done
say "1.5b: $(show 1.5b-q8_0)"
ready 7b-q8_0
for r in 1 2; do run head $B 7b-q8_0; run probe3 $P 7b-q8_0 OCTO_GEMV_PROBE=3; done
say "7b: $(show 7b-q8_0)"
say done
