#!/usr/bin/env bash
# Device call 7 (call6's binaries: main at 819698c): where the decode steps go now (bench_decode
# --profile, tasks serialized, ~2.7 us of profiling each), and the 0.5B's attention in 256-invocation
# workgroups (OCTO_ATTENTION_WG=256; its group has 112 four-dim outputs, so the rule gives 128) against
# the default, alternating, at a 512-token prompt and by context.
# Run: bash benchmarks/results/2026-11-29-h200-qkv/call7.sh
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
  env "$@" timeout 150 $B/bench_decode --model $S/qwen2.5-$m.gguf --at-positions 1024,4096,8000 --decode-tokens 64 --ctx 8448 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/at.jsonl
  say "$m $l at: $(tail -3 $OUT/at.jsonl | grep -o '"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
m=0.5b-q8_0; ready $m
for r in 1 2 3; do run head $m; run wg256 $m OCTO_ATTENTION_WG=256; done
at head $m; at wg256 $m OCTO_ATTENTION_WG=256
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do ready $m
  timeout 90 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 64 --profile > $OUT/profile-$m.txt 2>&1
  grep -A14 "where a decode step goes" $OUT/profile-$m.txt | head -16
done
say done
