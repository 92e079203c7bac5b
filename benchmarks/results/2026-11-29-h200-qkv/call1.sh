#!/usr/bin/env bash
# Device call 1 (main at cff2e6c + probe-skip.diff, not landed): what a decode step would save without
# the K and V projections' dispatches (the most a single Q|K|V task could save), without attention, and
# without Q. OCTO_PROBE_SKIP=<opcodes> leaves those tasks' dispatches out (wrong tokens; timing only),
# barriers unchanged. Alternating with the plain build in the same call.
# Run: bash benchmarks/results/2026-11-29-h200-qkv/call1.sh
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
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m; do ready $m
  for r in 1 2; do
    run plain $m
    run no-kv $m OCTO_PROBE_SKIP=RMSNORM_GEMV_KV
    run no-q $m OCTO_PROBE_SKIP=RMSNORM_GEMV_ROPE
    run no-attn $m OCTO_PROBE_SKIP=ATTENTION_TILE
  done
done
say done
