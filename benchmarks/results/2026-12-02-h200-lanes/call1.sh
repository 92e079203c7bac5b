#!/usr/bin/env bash
# Device call 1 (main at 96d7a2e = "base"; "new" = base + OCTO_GEMV_NR_ROUND / OCTO_GEMV_WG_ROUND knobs for
# the rounding GEMV_ADD's lanes, and no division for one lane). bench_decode at a 512-token prompt over
# lane shapes of the rounding GEMV_ADDs (attention and FFN residuals), serialized profiles of each, the
# peer (llama.cpp 3f545bec, built here) on the same files.
# Run: bash benchmarks/results/2026-12-02-h200-lanes/call1.sh   (carry .carry-s24, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s24
mkdir -p /tmp/new /tmp/base; tar -xJf $C/new.tar.xz -C /tmp/new; tar -xJf $C/base.tar.xz -C /tmp/base
N=/tmp/new/bin; BB=/tmp/base/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( JOBS=10 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $BB --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $BB --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
# The writer case of the integer-dot conformance under the lane shapes measured below.
for v in "" "OCTO_GEMV_NR_ROUND=2" "OCTO_GEMV_NR_ROUND=4 OCTO_GEMV_WG_ROUND=256" "OCTO_GEMV_NR_ROUND=1 OCTO_GEMV_WG_ROUND=64"; do
  env $v timeout 100 $N/gpu_conformance_gemv -tc='*rounded by the GEMV_ADD*' >> $OUT/conformance-gemv.txt 2>&1
  say "conformance writer case [$v]: exit $? $(grep 'assertions' $OUT/conformance-gemv.txt | tail -1)"
done
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 60 $b/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
prof() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 32 --profile 2>&1 | grep '"profile_role","phase":"decode"' | sed "s/^{/{\"v\":\"$l\",\"m\":\"$m\",/" >> $OUT/profile.jsonl
}
V1="OCTO_GEMV_NR_ROUND=2"; V2="OCTO_GEMV_NR_ROUND=4 OCTO_GEMV_WG_ROUND=256"; V3="OCTO_GEMV_NR_ROUND=2 OCTO_GEMV_WG_ROUND=64"
V4="OCTO_GEMV_NR_ROUND=1 OCTO_GEMV_WG_ROUND=64"; V5="OCTO_GEMV_NR_ROUND=8 OCTO_GEMV_WG_ROUND=512"
ready 1.5b-q4_k_m; say "small models ready"
for m in 1.5b-q8_0 1.5b-q4_k_m; do
  for r in 1 2; do
    run base $BB $m; run new $N $m; run v1 $N $m $V1; run v2 $N $m $V2; run v3 $N $m $V3; run v4 $N $m $V4; run v5 $N $m $V5
  done
done
for r in 1 2; do
  run base $BB 0.5b-q8_0; run new $N 0.5b-q8_0
  run w-v4 $N 0.5b-q8_0 OCTO_GEMV_X8=2 $V4; run w-v1 $N 0.5b-q8_0 OCTO_GEMV_X8=2 $V1
done
prof new 1.5b-q8_0; prof v1 1.5b-q8_0 $V1; prof v2 1.5b-q8_0 $V2; prof v3 1.5b-q8_0 $V3; prof v4 1.5b-q8_0 $V4; prof v5 1.5b-q8_0 $V5
say "1.5b profiles done"
ready 7b-q4_k_m; say "7b models ready"
for m in 7b-q8_0 7b-q4_k_m; do
  for r in 1 2; do
    run base $BB $m; run new $N $m; run v1 $N $m $V1; run v2 $N $m $V2; run v5 $N $m $V5
  done
done
prof new 7b-q8_0; prof v1 7b-q8_0 $V1; prof v2 7b-q8_0 $V2; prof v5 7b-q8_0 $V5
say "7b profiles done"
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
if [ -f /tmp/peer-out/peer.tar.xz ]; then
  cp /tmp/peer-out/peer.tar.xz $OUT/
  mkdir -p /tmp/peer-bin; tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q8_0 7b-q4_k_m; do
    timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  done
fi
say done
