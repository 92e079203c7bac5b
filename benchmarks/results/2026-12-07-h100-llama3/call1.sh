#!/usr/bin/env bash
# Device call 1 (planned in the forty-second session, which was lent no device; run in the forty-third): Llama 3.1+'s
# RoPE scaling on the card. (1) The HF oracle: tools/make_reference_models.py --kinds llama3 (transformers'
# LlamaForCausalLM with the "llama3" scaling, float64 logits) into $OUT/ref/llama3, to be committed as
# tests/data/ref_models/llama3 with its cases in unit_hf_reference_models / gpu_runtime_hf_models. (2)
# Conformance on the card: gpu_conformance's ROPE cases (the ramp among them), gpu_fused_decode. (3)
# Decode and pp512 of the llama shapes, whose GGUFs now carry rope_freqs.weight as Llama 3.2 1B's and
# 3.1 8B's do (tools/make_bench_models.py), Q8_0 and Q4_K_M, against the peer on the same files.
# SmolLM2's shapes (9 heads over 3 KV heads; 32 KV heads), Q8_0, the same way. (The forty-first session's
# unrun Qwen3-8B call was cut from it for device time.) (4) Decode
# attention alone (bench_attention, F16 cache) on the 0.5B, 1.5B and 7B shapes, for issue 16's 5 us.
# Prepare here: CARRY_DIR=.carry-s43 BUILD_DIR=build/device43 bash tools/build_for_device.sh; into .carry-s43c
# (the carry's 64 MiB): bin.tar.xz (tar -cJf of bin/: gpu_conformance gpu_fused_decode bench_decode
# bench_attention octo), qwen2-tokenizer/ and the peer's pack (bash tools/build_peer.sh --pack-source
# .carry-s43c/peer-src.tar.xz SRC).
# Run: bash benchmarks/results/2026-12-07-h100-llama3/call1.sh   (carry .carry-s43c, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 300 bash tools/build_peer.sh --from-pack .carry-s43c/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
( cd tools && timeout 120 python3 make_reference_models.py --out $OUT/ref --kinds llama3 > $OUT/ref-log.txt 2>&1; echo "ref rc=$?" >> $OUT/ref-log.txt ) &
mkdir -p /tmp/bin && tar -xJf .carry-s43c/bin.tar.xz -C /tmp/bin
N=/tmp/bin; T=.carry-s43c/qwen2-tokenizer; S=/tmp/models
( timeout 120 $N/gpu_conformance -tc="conformance: ROPE*" > $OUT/conf.txt 2>&1; echo "gpu_conformance ROPE rc=$?" >> $OUT/conf.txt
  timeout 200 $N/gpu_fused_decode >> $OUT/conf.txt 2>&1; echo "gpu_fused_decode rc=$?" >> $OUT/conf.txt ) &
conf=$!
# CALL_LIMIT: the call's seconds (600, or less where less device time is left); what would not fit is
# skipped, and the log says so.
L=${CALL_LIMIT:-600}
late() { [ $(( $(date +%s) - T0 )) -gt $(( L - ${1:-120} )) ]; }
models() {  # shapes types
  late 270 && { say "skipped making $1 $2 (time)"; return; }
  bash tools/make_bench_models.sh --tokenizer $T --shapes $1 --types $2 --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1; say "$1 $2 made"
}
run() {  # model knob
  [ -f $S/$1.gguf ] || return 0
  late && { say "skipped $1 (time)"; return; }
  env $2 timeout 60 $N/bench_decode --model $S/$1.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$2\",/" >> $OUT/decode.jsonl
  say "$1 $2: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*' | tr '\n' ' ')"
}
models smollm2-135m,llama-1b q8_0,q4_k_m
wait $conf; say "conformance: $(grep -c 'rc=0' $OUT/conf.txt) of 2 passed"
timeout 60 $N/bench_attention --shapes 14x2x64,12x2x128,28x4x128 --ctx 1024,16384,32768 --kv-types f16 > $OUT/attention.jsonl 2>>$OUT/log.txt; say "attention: $(grep -o '"us_per_layer":[0-9.]*' $OUT/attention.jsonl | tr '\n' ' ')"
for m in llama-1b-q8_0 llama-1b-q4_k_m smollm2-135m-q8_0; do run $m OCTO_X=0; done
models llama-8b q4_k_m; run llama-8b-q4_k_m OCTO_X=0
models smollm2-1.7b q8_0; run smollm2-1.7b-q8_0 OCTO_X=0
models llama-8b q8_0; run llama-8b-q8_0 OCTO_X=0
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in llama-1b-q8_0 llama-1b-q4_k_m smollm2-135m-q8_0 llama-8b-q4_k_m smollm2-1.7b-q8_0 llama-8b-q8_0; do
  [ -f $S/$m.gguf ] || continue
  late 40 && { say "skipped peer $m (time)"; continue; }
  [ -n "$LB" ] && timeout 40 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 1 -o jsonl 2>>$OUT/log.txt | sed "s/^{/{\"file\":\"$m\",/" >> $OUT/peer.jsonl
  say "peer $m: $(grep "\"$m\"" $OUT/peer.jsonl | grep -o '"n_prompt": [0-9]*\|"avg_ts": [0-9.]*' | tr '\n' ' ')"
done
wait; say "ref: $(tail -1 $OUT/ref-log.txt)"
say done
