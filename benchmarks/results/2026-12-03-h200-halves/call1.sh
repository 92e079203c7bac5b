#!/usr/bin/env bash
# Device call 1: the Q4_K / Q5_K integer GEMV chunk of a whole 64-element group (OCTO_GEMV_K4H=2, the
# block header loaded once per 32 quant bytes) against the 16-byte chunk (K4H=1, the default), alternating,
# two rounds, on 7B and 1.5B Q4_K_M, with a profile of each at 7B; the GEMV alone (bench_gemv_bandwidth,
# 7B shapes); the 16-bit GEMV rule as built against the old shape (call4 of 2026-12-02-h200-argmax) on
# 0.5B and 1.5B F16; the peer (llama.cpp 3f545bec, llama-bench -p 512 -n 128 -r 2 -fa 1 -ngl 99) on the
# same files. Run: bash benchmarks/results/2026-12-03-h200-halves/call1.sh   (carry .carry-s29, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s29
mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo bench_gemv_bandwidth; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
( JOBS=12 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 7b,1.5b --types q4_k_m --scratch $S --bin $N --keep --keep-hf --no-bench;
  bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types f16 --scratch $S --bin $N --keep --keep-hf --no-bench ) > $OUT/models-log.txt 2>&1 &
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; [ -f $S/qwen2.5-$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
prof() { local m=$1 l=$2; shift 2; env "$@" timeout 90 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1; say "profile $m $l exit $?"; }
# The GEMV alone while the 7B model is made (its conversion runs on the CPU).
for k in 1 2; do
  OCTO_GEMV_K4H=$k timeout 60 $N/bench_gemv_bandwidth --sizes 37888x3584,3584x18944,3584x3584 --dtypes q4_k,q5_k --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"k4h\":$k,/" >> $OUT/gemv.jsonl
  say "gemv k4h=$k exit $?"
done
ready 7b-q4_k_m
for r in 1 2; do run k1 7b-q4_k_m OCTO_GEMV_K4H=1; run k2 7b-q4_k_m OCTO_GEMV_K4H=2; done
run k2nr8 7b-q4_k_m OCTO_GEMV_K4H=2 OCTO_GEMV_NR_SWIGLU=8
prof 7b-q4_k_m k1 OCTO_GEMV_K4H=1; prof 7b-q4_k_m k2 OCTO_GEMV_K4H=2
ready 1.5b-q4_k_m
for r in 1 2; do run k1 1.5b-q4_k_m OCTO_GEMV_K4H=1; run k2 1.5b-q4_k_m OCTO_GEMV_K4H=2; done
OLD="OCTO_GEMV_WG_NARROW=64 OCTO_GEMV_NR_WIDE16=2 OCTO_GEMV_WG_WIDE=64"
for m in 0.5b-f16 1.5b-f16; do
  ready $m; for r in 1 2; do run new $m; run old $m $OLD; done
done
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
peer() {
  [ -f /tmp/peer-out/peer.tar.xz ] || return
  mkdir -p /tmp/peer-bin; [ -x /tmp/peer-bin/llama-bench ] || tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  timeout 90 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
peer 7b-q4_k_m; peer 1.5b-q4_k_m; peer 0.5b-f16; peer 1.5b-f16
[ -f /tmp/peer-out/peer.json ] && cp /tmp/peer-out/peer.json $OUT/
say done
