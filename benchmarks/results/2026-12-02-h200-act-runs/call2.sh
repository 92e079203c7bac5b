#!/usr/bin/env bash
# Device call 2 (new2: bench_decode at d3e7c5e as in call1; bench_decode_q6probe fixed to keep the
# activations finite: timing only, wrong values, the Q6_K integer loop reading its blocks with aligned
# 16-byte loads): on 7B Q4_K_M the default, the probe and the SWIGLU writer's lanes at 8 rows
# (OCTO_GEMV_NR_SWIGLU=8: 4 lanes of 4 outputs) alternating, two rounds; serialized profiles of the probe
# and of OCTO_GEMV_X8=2 (the O projection's x rounded ahead: what an attention that rounded its output
# would save that GEMV); the default on the four models beside the peer (llama.cpp 3f545bec, built here,
# llama-bench -p 512 -n 128 -r 2 -fa 1 -ngl 99) on the same files.
# Run: bash benchmarks/results/2026-12-02-h200-act-runs/call2.sh   (carry .carry-s26, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s26
mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( JOBS=12 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $N --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $N --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q4_k_m --scratch $S --bin $N --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 60 $b --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_per_layer":[0-9.]*' | tr '\n' ' ')"
}
ready 7b-q4_k_m; say "7b ready"
for r in 1 2; do
  run default $N/bench_decode 7b-q4_k_m
  run q6probe $N/bench_decode_q6probe 7b-q4_k_m
  run swiglu8 $N/bench_decode 7b-q4_k_m OCTO_GEMV_NR_SWIGLU=8
done
timeout 90 $N/bench_decode_q6probe --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m-q6probe.txt 2>&1
OCTO_GEMV_X8=2 timeout 90 $N/bench_decode --model $S/qwen2.5-7b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-7b-q4_k_m-x8all.txt 2>&1
say "profiles done"
ready 1.5b-q4_k_m; say "all models ready"
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m; do run default $N/bench_decode $m; done
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
if [ -f /tmp/peer-out/peer.tar.xz ]; then
  for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do
    mkdir -p /tmp/peer-bin; [ -x /tmp/peer-bin/llama-bench ] || tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
    timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  done
fi
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m; do run default $N/bench_decode $m; done
say done
