#!/usr/bin/env bash
# Device call 3 (call2's change with each run's step, sum and sum of squares in one 16-byte word, one load:
# "new"; "base" is the twenty-second session's build, 3f9fd6a). The writer-rounding conformance case on
# the card; bench_decode at a 512-token prompt, new against base alternating; the peer (llama.cpp 3f545bec, call1's build) on the same files.
# Run: bash benchmarks/results/2026-12-02-h200-writer/call3.sh   (carry .carry-s23, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s23
mkdir -p /tmp/new /tmp/base /tmp/peer-bin; tar -xJf $C/new3.tar.xz -C /tmp/new; tar -xJf $C/base.tar.xz -C /tmp/base
tar -xJf $C/peer.tar.xz -C /tmp/peer-bin
N=/tmp/new/bin; BB=/tmp/base/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $BB --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $BB --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 100 $N/gpu_conformance_gemv -tc='*rounded by the GEMV_ADD*' > $OUT/conformance-gemv.txt 2>&1
say "gpu_conformance_gemv writer case: exit $? $(grep 'assertions' $OUT/conformance-gemv.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
ready 7b-q4_k_m; say "models ready"
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 60 $b/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"barriers_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
for r in 1 2; do
  for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0 7b-q4_k_m; do
    run new $N $m; run base $BB $m
  done
done
for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0 7b-q4_k_m; do
  timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
done
say done
