#!/usr/bin/env bash
# Device call 2 (main at 6410177 + the writer's rounding with a one-round tail, uncommitted): the RMSNORM-fused integer GEMVs
# read x rounded by the GEMV_ADD that wrote it (its last workgroup) instead of by a gemv_quantize_x launch
# ahead of them. Against OCTO_GEMV_X8_WRITER=0 (the previous code path exactly), alternating; the integer
# GEMV conformance cases on the card; the peer (llama.cpp 3f545bec) on the same files in the same call;
# one profiled step of each (dispatches, barriers, where the time goes).
# Run: bash benchmarks/results/2026-11-29-h200-round/call2.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p20
mkdir -p /tmp/head /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 $B/gpu_conformance_gemv -tc="*integer-dot*" > $OUT/conformance.txt 2>&1
say "gpu_conformance_gemv (integer-dot): exit $? $(grep 'assertions' $OUT/conformance.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"dispatches":[0-9]*\|"barriers":[0-9]*' | tr '\n' ' ')"
}
prof() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$m-$l.txt 2>&1
  say "$m $l profile: exit $?"
}
peer() {
  timeout 120 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do ready $m
  for r in 1 2 3; do
    run head $m
    run launch $m OCTO_GEMV_X8_WRITER=0
  done
  prof head $m
  prof launch $m OCTO_GEMV_X8_WRITER=0
  peer $m
done
tar -C $OUT -czf $OUT/profiles.tgz $(cd $OUT; ls profile-*.txt) && rm $OUT/profile-*.txt
say done
