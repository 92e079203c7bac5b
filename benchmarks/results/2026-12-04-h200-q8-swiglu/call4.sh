#!/usr/bin/env bash
# Device call 4 (new3: main with Qwen3's q and k one task each, RMSNORM_GEMV_NORM_ROPE / _KV, uncommitted):
# the default against OCTO_FUSION=no-head-norm (the two-task form: RMSNORM_GEMV, then RMSNORM_ROPE(_KV)),
# alternating, two rounds, on Qwen3-8B Q4_K_M and Qwen3-0.6B / 1.7B Q8_0 layers (random weights), the
# peer (llama.cpp 3f545bec) on the same files after the octo runs, a profile of the 8B.
# Run: bash benchmarks/results/2026-12-04-h200-q8-swiglu/call4.sh   (carry .carry-s30, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s30
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new3.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
( JOBS=8 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
mk() { bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench; }
( mk qwen3-0.6b q8_0; mk qwen3-1.7b q8_0 ) > $OUT/models-small-log.txt 2>&1 &
P1=$!
( mk qwen3-8b q4_k_m ) > $OUT/models-8b-log.txt 2>&1 &
P2=$!
ready() { local n=0; while [ ! -f $S/$1.gguf ] && [ $n -lt 100 ]; do sleep 3; n=$((n+1)); done; sleep 1; [ -f $S/$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  [ -f $S/$m.gguf ] || return
  env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
prof() { local m=$1 l=$2; shift 2; [ -f $S/$m.gguf ] || return; env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1; say "profile $m $l exit $?"; }
peer() {
  [ -f $S/$1.gguf ] || return
  [ -f /tmp/peer-out/peer.tar.xz ] || { say "no peer"; return; }
  mkdir -p /tmp/peer-bin; [ -x /tmp/peer-bin/llama-bench ] || tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  timeout 90 /tmp/peer-bin/llama-bench -m $S/$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
# Every model made before any measurement (the conversions load the CPU, the checkpoints the GPU), then
# the octo variants alternating on each file, the peer after.
wait $P1; say "small models made"; wait $P2; say "8B models made"; ls -la $S/*.gguf >> $OUT/log.txt
for m in qwen3-8b-q4_k_m qwen3-0.6b-q8_0 qwen3-1.7b-q8_0; do
  for r in 1 2; do run def $m; run two $m OCTO_FUSION=no-head-norm; done
done
prof qwen3-8b-q4_k_m def
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
for m in qwen3-8b-q4_k_m qwen3-0.6b-q8_0 qwen3-1.7b-q8_0; do peer $m; done
[ -f /tmp/peer-out/peer.json ] && cp /tmp/peer-out/peer.json $OUT/
df -h /tmp | tail -1 >> $OUT/log.txt
say done
