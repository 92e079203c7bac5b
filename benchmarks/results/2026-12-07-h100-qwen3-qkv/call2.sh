#!/usr/bin/env bash
# Device call 2 (forty-first session; cut to fit the session's last device time): Qwen3-8B Q4_K_M with the
# Q|K|V task (three launches, the K-quants' default) against OCTO_FUSION=no-qkv and OCTO_GEMV_QKV=1 (one
# launch), one round. The binaries of call1.
# Run: bash benchmarks/results/2026-12-07-h100-qwen3-qkv/call2.sh   (carry .carry-s40, .gl)
set -u
T0=$(date +%s)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json XDG_CACHE_HOME=/tmp/octo-cache
say() { echo "[$(date +%T) +$(( $(date +%s) - T0 ))s] $*" | tee -a $OUT/log.txt; }
rm -rf /tmp/new; mkdir -p /tmp/new; tar -xJf .carry-s40/new.tar.xz -C /tmp/new
N=/tmp/new/bin; T=/tmp/new/qwen2-tokenizer; S=/tmp/models
bash tools/make_bench_models.sh --tokenizer $T --shapes qwen3-8b --types q4_k_m --scratch $S --bin $N --keep --no-bench > $OUT/models-log.txt 2>&1; say "8b made"
for kv in OCTO_X=0 OCTO_FUSION=no-qkv OCTO_GEMV_QKV=1; do
  env $kv timeout 60 $N/bench_decode --model $S/qwen3-8b-q4_k_m.gguf --prompt-tokens 512 --decode-tokens 64 --repeat 2 --bandwidth-gbs 3071 2>>$OUT/log.txt | sed "s/^{/{\"knob\":\"$kv\",/" >> $OUT/decode.jsonl
  say "$kv: $(tail -1 $OUT/decode.jsonl | grep -o '"prefill_tok_s":[0-9.]*\|"decode_tok_s":[0-9.]*\|"task_dispatches_run_per_layer":[0-9.]*' | tr '\n' ' ')"
done
say done
