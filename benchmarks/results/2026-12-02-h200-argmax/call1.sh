#!/usr/bin/env bash
# Device call 1 (twenty-seventh session): the split SAMPLE_ARGMAX (shaders/argmax.comp SPLIT) on the card
# (its conformance cases), against OCTO_ARGMAX_SPLIT=0 alternating on 0.5B and 1.5B Q8_0 (two rounds);
# serialized profiles; the F16 models (0.5B, 1.5B: issue 15's 1200 / 750 targets, last measured in the
# thirteenth session) with profiles; the peer (llama.cpp 3f545bec, built here, llama-bench -p 512 -n 128
# -r 2 -fa 1 -ngl 99) on the same four files.
# Run: bash benchmarks/results/2026-12-02-h200-argmax/call1.sh   (carry .carry-s27, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
C=$PWD/.carry-s27
mkdir -p /tmp/new; tar -xJf $C/new1.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
for b in bench_decode octo gpu_conformance; do [ -x $N/$b ] || { say "missing $N/$b"; exit 1; }; done
( JOBS=12 PEER_OUT=/tmp/peer-out bash tools/build_peer.sh --from-pack $C/peer-src.tar.xz > /tmp/peer-build.log 2>&1; echo "peer build exit $?" >> /tmp/peer-build.log ) &
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,f16 --scratch $S --bin $N --keep --no-bench ) > $OUT/models-log.txt 2>&1 &
timeout 120 $N/gpu_conformance -tc="*SAMPLE_ARGMAX*" > $OUT/conformance.txt 2>&1; say "conformance exit $? $(tail -2 $OUT/conformance.txt | head -1)"
ready() { local n=0; while [ ! -f $S/qwen2.5-$1.gguf ] && [ $n -lt 150 ]; do sleep 3; n=$((n+1)); done; sleep 1; [ -f $S/qwen2.5-$1.gguf ] || say "no model $1"; }
run() {  # label model env...
  local l=$1 m=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/qwen2.5-$m.gguf --prompt-tokens 512 --decode-tokens 128 --repeat 2 --bandwidth-gbs 4800 2>>$OUT/log.txt | sed "s/^{/{\"v\":\"$l\",/" >> $OUT/decode.jsonl
  say "$m $l: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_per_layer":[0-9.]*\|"fraction_of_bound":[0-9.]*' | tr '\n' ' ')"
}
prof() { timeout 90 $N/bench_decode --model $S/qwen2.5-$1.gguf --prompt-tokens 512 --decode-tokens 32 --profile > $OUT/profile-$1.txt 2>&1; say "profile $1 exit $?"; }
ready 0.5b-q8_0; say "0.5b q8_0 ready"
for r in 1 2; do run split 0.5b-q8_0; run single 0.5b-q8_0 OCTO_ARGMAX_SPLIT=0; done
prof 0.5b-q8_0
ready 0.5b-f16; run default 0.5b-f16; prof 0.5b-f16
ready 1.5b-q8_0
for r in 1 2; do run split 1.5b-q8_0; run single 1.5b-q8_0 OCTO_ARGMAX_SPLIT=0; done
ready 1.5b-f16; run default 1.5b-f16; prof 1.5b-f16
n=0; while ! grep -q "peer build exit" /tmp/peer-build.log && [ $n -lt 60 ]; do sleep 3; n=$((n+1)); done
tail -2 /tmp/peer-build.log >> $OUT/log.txt
if [ -f /tmp/peer-out/peer.tar.xz ]; then
  mkdir -p /tmp/peer-bin; tar -xJf /tmp/peer-out/peer.tar.xz -C /tmp/peer-bin
  for m in 0.5b-q8_0 0.5b-f16 1.5b-q8_0 1.5b-f16; do
    timeout 60 /tmp/peer-bin/llama-bench -m $S/qwen2.5-$m.gguf -ngl 99 -p 512 -n 128 -r 2 -fa 1 -o jsonl >> $OUT/peer.jsonl 2>>$OUT/log.txt
    say "peer $m: $(tail -2 $OUT/peer.jsonl | python3 -c 'import sys,json
for l in sys.stdin: d=json.loads(l); print(d["n_prompt"], d["n_gen"], round(d["avg_ts"],1), end="; ")')"
  done
fi
for m in 0.5b-f16 1.5b-f16; do run default $m; done
say done
