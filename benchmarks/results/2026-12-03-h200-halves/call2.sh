#!/usr/bin/env bash
# Device call 2 (new2: K4H = 2 for the gate|up pairs over rows of K >= 3072 only, the rule as built):
# the default against OCTO_GEMV_K4H=1 (call1's default), alternating, two rounds, on 7B Q4_K_M and 7B
# Q5_K_M; the SWIGLU lanes 64 wide with it (one run); profiles of 1.5B Q4_K_M at K4H 1 and 2; the peer
# on the 7B Q5_K_M. Run: bash benchmarks/results/2026-12-03-h200-halves/call2.sh   (carry .carry-s29, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s29
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf $C/new2.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
[ -x /tmp/peer-bin/llama-bench ] || { ( JOBS=12 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) & }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q5_k_m --scratch $S --bin $N --keep --keep-hf --no-bench;
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b,1.5b --types q4_k_m --scratch $S --bin $N --keep --keep-hf --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; [ -f $S/qwen2.5-$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
prof() { local m=$1 l=$2; shift 2; env "$@" timeout 90 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1; say "profile $m $l exit $?"; }
ready 7b-q4_k_m
for r in 1 2; do run rule 7b-q4_k_m; run k1 7b-q4_k_m OCTO_GEMV_K4H=1; done
run rule-wg64 7b-q4_k_m OCTO_GEMV_WG_SWIGLU=64
ready 1.5b-q4_k_m
prof 1.5b-q4_k_m k1 OCTO_GEMV_K4H=1; prof 1.5b-q4_k_m k2 OCTO_GEMV_K4H=2
ready 7b-q5_k_m
for r in 1 2; do run rule 7b-q5_k_m; run k1 7b-q5_k_m OCTO_GEMV_K4H=1; done
prof 7b-q5_k_m rule
n=0; while [ ! -x /tmp/peer-bin/llama-bench ] && ! grep -q "peer build exit" /tmp/peer-build.log 2>/dev/null && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
peer() {
  mkdir -p /tmp/peer-bin; [ -x /tmp/peer-bin/llama-bench ] || { [ -f /tmp/peer-out/peer.tar.xz ] && tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin; }
  [ -x /tmp/peer-bin/llama-bench ] || return
  timeout 90 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
peer 7b-q5_k_m; peer 7b-q4_k_m
say done
