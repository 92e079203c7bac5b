#!/usr/bin/env bash
# Device call 5 (main at 2d1b3c1 + gemm_coop's three-stage K loop with the X16 tiles, as landed,
# uncommitted then). On the card: gpu_gemm_tiles (X16 and three stages against x rounded in the
# tiles, bit for bit, even and odd K step counts) and the fused prefill GEMM conformance; bench_gemm
# default against OCTO_GEMM_DEEP=0 (2d1b3c1's kernels); greedy ids of a ~450-token prompt with and
# without; bench_decode default against OCTO_GEMM_DEEP=0 alternating, and the peer (llama.cpp 3f545bec)
# on the same files in the same call.
# Run: bash benchmarks/results/2026-11-30-h200-x16/call5.sh
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-p21
mkdir -p /tmp/head /tmp/peer-bin; tar -xJf $C/head.tar.xz -C /tmp/head; tar -xJf $C/peer/peer.tar.xz -C /tmp/peer-bin
B=/tmp/head/bin; T=$C/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0 --scratch $S --bin $B --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m,q8_0 --scratch $S --bin $B --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 200 $B/gpu_gemm_tiles > $OUT/gpu_gemm_tiles.txt 2>&1; say "gpu_gemm_tiles: exit $? $(grep 'assertions' $OUT/gpu_gemm_tiles.txt)"
timeout 200 $B/gpu_conformance_fused -tc='*many rows*' > $OUT/gpu_conformance_fused.txt 2>&1
say "gpu_conformance_fused (many rows): exit $? $(grep 'assertions' $OUT/gpu_conformance_fused.txt)"
for x in "" 0; do
  OCTO_GEMM_DEEP=$x timeout 150 $B/bench_gemm --models 0.5b,1.5b,7b --tokens 512 --dtypes f16,q4_k --kernels auto 2>>$OUT/log.txt \
    | sed "s/^{/{\"deep\":\"$x\",/" >> $OUT/gemm.jsonl
  say "bench_gemm DEEP='$x': $(grep "\"deep\":\"$x\"" $OUT/gemm.jsonl | python3 -c 'import sys,json
for l in sys.stdin:
  d=json.loads(l); print(d["model"], d["dtype"], d.get("shape","model"), round(d["tflop_s"],1), end="; ")')"
done
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 200 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
prompt=$(for i in $(seq 1 30); do printf 'The quick brown fox %d jumps over the lazy dog near the river bank. ' $i; done)
ids() {  # model env... -> the generated ids
  local m=$1; shift
  env "$@" timeout 90 $B/qwen_generate --model $S/qwen2.5-$m.gguf -p "$prompt" -n 32 --ignore-eos --json 2>/dev/null | python3 -c "import sys,json
print(' '.join(str(json.loads(l)['id']) for l in sys.stdin if '\"id\"' in l))"
}
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 120 $B/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
peer() {
  timeout 120 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$1.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
  say "peer $1: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
}
for m in 0.5b-q8_0 1.5b-q8_0 7b-q4_k_m 7b-q8_0; do ready $m
  a=$(ids $m); b=$(ids $m OCTO_GEMM_DEEP=0); echo "$m default: $a" >> $OUT/ids.txt; echo "$m deepoff: $b" >> $OUT/ids.txt
  say "$m ids default vs OCTO_GEMM_DEEP=0: $([ -n "$a" ] && [ "$a" = "$b" ] && echo same || echo DIFFER) ($(echo $a | wc -w) ids)"
  for r in 1 2; do
    run deep $m
    run off $m OCTO_GEMM_DEEP=0
  done
  peer $m
done
say done
