#!/usr/bin/env bash
# Device call 2 (thirty-ninth session): Qwen3's q and k (the head-norm GEMVs) at 4 rows a workgroup where
# narrow (kernels/gemv.cpp; call1 found every narrow GEMV at 4 rows ran Qwen3-0.6B decode 819 against 764
# tok/s, the 0.5B 1050 against 1064). Conformance of the new default on the card (gpu_conformance_fused's
# head-norm case, gpu_fused_decode's Qwen3 models step after step); decode with the default, with
# OCTO_GEMV_NR_HEAD_NORM=2 (the previous default) and with OCTO_GEMV_NR_NARROW=4 (every narrow GEMV at 4),
# alternating, two rounds, on Qwen3-0.6B / 1.7B, Llama-1B and Qwen2.5-0.5B (no head norm: controls);
# the profile of Qwen3-0.6B's step both ways; the peer (llama.cpp 3f545bec Vulkan) on the same files.
# Binaries: .carry-s39/new.tar.xz (this session's tree). Run: bash .../call2.sh (carry .carry-s39, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 300 bash tools/build_peer.sh --from-pack .carry-s39/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s39/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
( bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b,llama-1b,0.5b --types q8_0 --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1
  bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-1.7b --types q8_0 --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1; say "models made" ) &
models=$!
$N/octo_devices --boot >> $OUT/log.txt 2>&1; say "probe: $(grep -o 'mma layout [0-9]' $OUT/log.txt)"
conf() { local t=$1; shift; echo "=== $t $*" >> $OUT/conf.txt
  timeout 200 $N/$t "$@" >> $OUT/conf.txt 2>&1; say "$t $* exit $? $(grep -o 'test cases:.*' $OUT/conf.txt | tail -1)"; }
OCTO_GEMV_PLAN=gpu conf gpu_conformance_fused -tc="*Qwen3's q and k in one task*"
conf gpu_fused_decode
if grep -q "failed: [1-9]\|[1-9][0-9]* failed" $OUT/conf.txt; then say "conformance failed: stopping"; kill $peer $models 2>/dev/null; exit 1; fi
wait_for() { while ! grep -q "$1" $OUT/log.txt; do sleep 2; done; }
wait_for "models made"
run() {  # $1 model, $2 round, then env settings
  local m=$1 r=$2; shift 2
  env "$@" timeout 60 $N/bench_decode --model $S/$m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$*\",\"round\":$r,/" >> $OUT/decode.jsonl
  say "$m $*: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*' | tr '\n' ' ')"
}
for r in 1 2; do
  for m in qwen3-0.6b-q8_0 qwen3-1.7b-q8_0 llama-1b-q8_0 qwen2.5-0.5b-q8_0; do
    for kv in OCTO_X=0 OCTO_GEMV_NR_HEAD_NORM=2 OCTO_GEMV_NR_NARROW=4; do run $m $r $kv; done
  done
done
for kv in OCTO_X=0 OCTO_GEMV_NR_HEAD_NORM=2; do
  env $kv timeout 60 $N/bench_decode --model $S/qwen3-0.6b-q8_0.gguf --prompt-tokens 512 --decode-tokens 32 --repeat 1 --bandwidth-gbs 3071 --profile 2>&1 | grep '"profile_role"\|"profile_step"' | sed "s/^{/{\"knob\":\"$kv\",/" >> $OUT/profile.jsonl
done
say "profiles done"
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in qwen3-0.6b-q8_0 qwen3-1.7b-q8_0 llama-1b-q8_0 qwen2.5-0.5b-q8_0; do
  [ -n "$LB" ] && [ -f $S/$m.gguf ] && timeout 60 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 1 -o jsonl 2>>$OUT/log.txt | sed "s/^{/{\"file\":\"$m\",/" >> $OUT/peer.jsonl
  say "peer $m: $(grep "\"$m\"" $OUT/peer.jsonl | grep -o '"n_prompt": [0-9]*\|"avg_ts": [0-9.]*' | tr '\n' ' ')"
done
say done
