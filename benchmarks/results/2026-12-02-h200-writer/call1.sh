#!/usr/bin/env bash
# Device call 1 (main at 4ba39e6 + x rounded by the GEMV_ADD that writes it, uncommitted then: "new";
# "base" is the twenty-second session's build, 3f9fd6a). On the card: the integer-dot GEMV conformance
# (the writer-rounding case included) and the fast-precision decode contract; bench_decode at a 512-token
# prompt, new (default) against new with OCTO_GEMV_X8_WRITER=0 (the launch ahead) and base, alternating;
# one serialized profile of each way on the 1.5B; the peer (llama.cpp 3f545bec, built here) on the same files.
# Run: bash benchmarks/results/2026-12-02-h200-writer/call1.sh   (carry .carry-s23, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s23
mkdir -p /tmp/new /tmp/base; tar -xJf $C/new.tar.xz -C /tmp/new; tar -xJf $C/base.tar.xz -C /tmp/base
N=/tmp/new/bin; BB=/tmp/base/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( JOBS=8 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $BB --keep --no-bench
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q4_k_m --scratch $S --bin $BB --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 150 $N/gpu_conformance_gemv -tc='*integer-dot*' > $OUT/conformance-gemv.txt 2>&1
say "gpu_conformance_gemv integer-dot: exit $? $(grep 'assertions' $OUT/conformance-gemv.txt)"
timeout 60 $N/gpu_fused_decode -tc='precision contract*' > $OUT/fused-decode.txt 2>&1
say "gpu_fused_decode precision: exit $? $(grep 'assertions' $OUT/fused-decode.txt)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 120 ]; do sleep 3; n=$((n+1)); done; sleep 1; }
ready 7b-q4_k_m; say "models ready"
run() {  # label bin model env...
  local l=$1 b=$2 m=$3; shift 3
  env "$@" timeout 60 $b/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"barriers_per_layer":[0-9.]*\|"task_dispatches":[0-9]*' | tr '\n' ' ')"
}
for r in 1 2; do
  for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do
    run new $N $m; run launch $N $m OCTO_GEMV_X8_WRITER=0; run base $BB $m
  done
done
for v in "" "OCTO_GEMV_X8_WRITER=0"; do
  env $v timeout 60 $N/bench_decode --model $S/qwen2.5-1.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-1.5b-q8_0${v:+-launch}.txt 2>&1
done
say "profiles done"
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 30 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
if [ -f /tmp/peer-out/peer.tar.xz ]; then
  cp /tmp/peer-out/peer.tar.xz $OUT/
  mkdir -p /tmp/peer-bin; tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  for m in 0.5b-q8_0 1.5b-q8_0 1.5b-q4_k_m 7b-q4_k_m; do
    timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  done
fi
say done
