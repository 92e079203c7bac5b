#!/usr/bin/env bash
# Device call 2: the landed rule ("new2": rounding grids of at most 128 workgroups take 4 lanes of 256
# over 4 columns) against base (96d7a2e), alternating, two rounds; serialized profiles of 1.5B Q4_K_M
# both ways; the writer conformance case; the peer (llama.cpp 3f545bec, built here) on the same files.
# Run: bash benchmarks/results/2026-12-02-h200-lanes/call2.sh   (carry .carry-s24, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s24
mkdir -p /tmp/new /tmp/base; tar -xJf $C/new2.tar.xz -C /tmp/new; tar -xJf $C/base.tar.xz -C /tmp/base
N=/tmp/new/bin; BB=/tmp/base/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( JOBS=12 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b --types q8_0 --scratch $S --bin $BB --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 1.5b --types q8_0,q4_k_m --scratch $S --bin $BB --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $BB --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 100 $N/gpu_conformance_gemv -tc='*rounded by the GEMV_ADD*' > $OUT/conformance-gemv.txt 2>&1
say "conformance writer case: exit $? $(grep 'assertions' $OUT/conformance-gemv.txt | tail -1)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 60 $b/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"barriers_per_layer":[0-9.]*' | tr '\n' ' ')"
}
prof() {  # label bin model
  timeout 60 $2/bench_decode --model $S/qwen2.5-$3.gguf --prompt-tokens 512 --decode-tokens 32 --profile 2>&1 | grep '"profile_role","phase":"decode"' | sed "s/^{/{\"v\":\"$1\",\"m\":\"$3\",/" >> $OUT/profile.jsonl
}
ready 1.5b-q4_k_m; say "small models ready"
for r in 1 2; do
  for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m; do run new2 $N $m; run base $BB $m; done
done
prof new2 $N 1.5b-q4_k_m; prof base $BB 1.5b-q4_k_m
say "profiles done"
ready 7b-q4_k_m; say "7b ready"
run new2 $N 7b-q4_k_m; run base $BB 7b-q4_k_m
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
say done
