#!/usr/bin/env bash
# Device call 1 (fortieth session): RMSNORM_GEMV_QKV, one task and one launch for a layer's q, k and v
# (docs/ir.md 5.1, docs/vulkan.md "One launch for q, k and v"). Conformance on the card
# (gpu_conformance_qkv, gpu_fused_decode), then decode with the default against OCTO_FUSION=no-qkv (the
# three tasks), two rounds alternating, on Qwen2.5 0.5B / 1.5B / 7B Q8_0 and 1.5B / 7B Q4_K_M (whose v is
# Q6_K in some layers: those layers run the task as three launches), the peer on the same files, and a
# serialized profile of the 0.5B step in both forms.
# Binaries: .carry-s40/new.tar.xz (this session's tree). Run: bash .../call1.sh (carry .carry-s40, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 300 bash tools/build_peer.sh --from-pack .carry-s40/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s40/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
( bash tools/make_bench_models.sh --tokenizer $T --shapes 0.5b,1.5b --types q8_0,q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "models made"
  bash tools/make_bench_models.sh --tokenizer $T --shapes 7b --types q8_0,q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models7b-log.txt 2>&1; say "7b made" ) &
models=$!
conf() { local t=$1; shift; echo "=== $t $*" >> $OUT/conf.txt
  timeout 200 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"; }
OCTO_GEMV_PLAN=gpu conf gpu_conformance_qkv
conf gpu_fused_decode
if grep -q "failed: [1-9]\|[1-9][0-9]* failed" $OUT/conf.txt; then say "conformance failed: stopping"; kill $peer $models 2>/dev/null; exit 1; fi
wait $models
MODELS="qwen2.5-0.5b-q8_0 qwen2.5-1.5b-q8_0 qwen2.5-1.5b-q4_k_m qwen2.5-7b-q4_k_m qwen2.5-7b-q8_0"
for r in 1 2; do
  for m in $MODELS; do
    for kv in OCTO_X=0 OCTO_FUSION=no-qkv; do
      env $kv timeout 90 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$kv\",\"round\":$r,/" >> $OUT/decode.jsonl
      say "$m $kv: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ') $(grep -o '[0-9.]* dispatches and [0-9.]* barriers' $OUT/log.txt | tail -1)"
    done
  done
done
for kv in OCTO_X=0 OCTO_FUSION=no-qkv; do
  env $kv timeout 60 $N/bench_decode --model $S/qwen2.5-0.5b-q8_0.gguf --prompt-tokens 512 --decode-tokens 16 --profile > $OUT/profile-0.5b-${kv#*=}.txt 2>&1
done; say "profiles done"
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in $MODELS; do
  [ -n "$LB" ] && timeout 60 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 1 -o jsonl 2>>$OUT/log.txt | sed "s/^{/{\"file\":\"$m\",/" >> $OUT/peer.jsonl
  say "peer $m: $(grep "\"$m\"" $OUT/peer.jsonl | grep -o '"n_prompt": [0-9]*\|"avg_ts": [0-9.]*' | tr '\n' ' ')"
done
say done
