#!/usr/bin/env bash
# Device call 1 (forty-first session): Qwen3's q, k and v in one task (RMSNORM_GEMV_NORM_QKV). Conformance on
# the card, then decode on Qwen3-0.6B (Q8_0, Q4_K_M) and Qwen3-1.7B (Q8_0), default against OCTO_FUSION=no-qkv
# (three tasks) and, over Q4_K_M, OCTO_GEMV_QKV=1 (one launch over the K-quants), two rounds alternating;
# Qwen2.5-0.5B Q8_0 once (the Qwen2 form's push block was repacked); the registers of the Q4_K GEMV
# pipelines (OCTO_PIPELINE_STATS=1) with the one launch; the peer on the same files.
# Run: bash benchmarks/results/2026-12-07-h100-qwen3-qkv/call1.sh   (carry .carry-s40, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
( PEER_OUT=/tmp/peer-pack timeout 300 bash tools/build_peer.sh --from-pack .carry-s40/peer-src.tar.xz > $OUT/peer-build.txt 2>&1 || echo "peer build failed" >> $OUT/log.txt ) &
peer=$!
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s40/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
( timeout 200 $N/gpu_conformance_qkv > $OUT/conf.txt 2>&1; echo "gpu_conformance_qkv rc=$?" >> $OUT/conf.txt
  timeout 200 $N/gpu_fused_decode >> $OUT/conf.txt 2>&1; echo "gpu_fused_decode rc=$?" >> $OUT/conf.txt ) &
conf=$!
bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-0.6b --types q8_0,q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "models 0.6b made"
bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-1.7b,0.5b --types q8_0 --scratch $S --bin $N --keep --no-bench >> $OUT/models-log.txt 2>&1; say "models 1.7b, 0.5b made"
wait $conf; say "conformance: $(grep -c 'rc=0' $OUT/conf.txt) of 2 passed"
run() {  # model knob round
  env $2 timeout 60 $N/bench_decode --model $S/$1.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$2\",\"round\":$3,/" >> $OUT/decode.jsonl
  say "$1 $2: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*' | tr '\n' ' ')"
}
for r in 1 2; do
  for m in qwen3-0.6b-q8_0 qwen3-1.7b-q8_0; do
    for kv in OCTO_X=0 OCTO_FUSION=no-qkv; do run $m $kv $r; done
  done
  for kv in OCTO_X=0 OCTO_FUSION=no-qkv OCTO_GEMV_QKV=1; do run qwen3-0.6b-q4_k_m $kv $r; done
done
run qwen2.5-0.5b-q8_0 OCTO_X=0 1
OCTO_PIPELINE_STATS=1 OCTO_GEMV_QKV=1 timeout 60 $N/bench_decode --model $S/qwen3-0.6b-q4_k_m.gguf --prompt-tokens 16 --decode-tokens 8 --repeat 1 > /dev/null 2> $OUT/pipeline-stats.txt
say "pipeline stats: $(grep -c . $OUT/pipeline-stats.txt) lines"
grep -i "q4_k" $OUT/pipeline-stats.txt | head -40 >> $OUT/log.txt
wait $peer; say "peer built"
mkdir -p /tmp/peer-bin && tar -xJf /tmp/peer-pack/peer.tar.xz -C /tmp/peer-bin 2>>$OUT/log.txt
LB=$(find /tmp/peer-bin -name llama-bench -type f | head -1)
for m in qwen3-0.6b-q8_0 qwen3-0.6b-q4_k_m qwen3-1.7b-q8_0; do
  [ -n "$LB" ] && timeout 60 $LB -m $S/$m.gguf -ngl 99 -p 512 -n 64 -r 2 -fa 1 -o jsonl 2>>$OUT/log.txt | sed "s/^{/{\"file\":\"$m\",/" >> $OUT/peer.jsonl
  say "peer $m: $(grep "\"$m\"" $OUT/peer.jsonl | grep -o '"n_prompt": [0-9]*\|"avg_ts": [0-9.]*' | tr '\n' ' ')"
done
say done
