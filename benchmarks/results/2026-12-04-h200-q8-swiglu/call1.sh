#!/usr/bin/env bash
# Device call 1: is 7B Q8_0 decode's drop (332.5-334.9 tok/s in the 24th-25th sessions, 313.5 in the 29th)
# the SWIGLU's lanes one subgroup (32) wide over rows of K >= 3072 (the 26th session's rule, measured on
# 7B Q4_K_M only)? Default against OCTO_GEMV_WG_SWIGLU=128 (the width before the rule) and =64, and
# OCTO_GEMV_SWIGLU_ROUND=0 (no rounding of the SWIGLU's row for the down projection), alternating, two
# rounds; a profile of the default; the peer (llama.cpp 3f545bec, llama-bench -p 512 -n 128 -r 2
# -fa 1 -ngl 99) on the same file in the same call. Beside it, decode attention's chunks of 32 keys
# (OCTO_ATTENTION_KEYS=32) against 64 on 0.5B, 1.5B and 7B Q8_0 (the 7B Q4_K_M ran 3% faster with 32 up
# to ~1k keys in the twenty-second session's calls, 8-20% slower past 4k).
# Run: bash benchmarks/results/2026-12-04-h200-q8-swiglu/call1.sh   (carry .carry-s30, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s30
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
( JOBS=12 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0 --scratch $S --bin $N --keep --keep-hf --no-bench;
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b,0.5b --types q8_0 --scratch $S --bin $N --keep --keep-hf --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; [ -f $S/qwen2.5-$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
prof() { local m=$1 l=$2; shift 2; env "$@" timeout 90 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1; say "profile $m $l exit $?"; }
ready 7b-q8_0
for r in 1 2; do
  run def 7b-q8_0; run wg128 7b-q8_0 OCTO_GEMV_WG_SWIGLU=128; run wg64 7b-q8_0 OCTO_GEMV_WG_SWIGLU=64; run noround 7b-q8_0 OCTO_GEMV_SWIGLU_ROUND=0
  run keys32 7b-q8_0 OCTO_ATTENTION_KEYS=32
done
prof 7b-q8_0 def
ready 1.5b-q8_0
for r in 1 2; do run def 1.5b-q8_0; run noround 1.5b-q8_0 OCTO_GEMV_SWIGLU_ROUND=0; run keys32 1.5b-q8_0 OCTO_ATTENTION_KEYS=32; done
ready 0.5b-q8_0
for r in 1 2; do run def 0.5b-q8_0; run keys32 0.5b-q8_0 OCTO_ATTENTION_KEYS=32; done
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
peer() {
  [ -f /tmp/peer-out/peer.tar.xz ] || return
  mkdir -p /tmp/peer-bin; [ -x /tmp/peer-bin/llama-bench ] || tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  timeout 90 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
peer 7b-q8_0; peer 1.5b-q8_0; peer 0.5b-q8_0
[ -f /tmp/peer-out/peer.json ] && cp /tmp/peer-out/peer.json $OUT/
say done
